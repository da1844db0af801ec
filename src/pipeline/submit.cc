#include "pipeline/submit.h"

#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <parquet/arrow/reader.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "artifact/blake3_digest.h"
#include "catalog/pipeline_spec.h"
#include "catalog/registry.h"
#include "common/progress.h"
#include "common/status.h"
#include "dist/worker_pool.h"
#include "exec/schema_catalog.h"
#include "pipeline/manifest.h"
#include "plan/fragment.h"
#include "storage/object_store.h"
#include "storage/sink_manifest.h"

namespace sluice::pipeline {

namespace {

using json = nlohmann::json;

std::string RandomHex() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%08x%08x", rd(), rd());
  return buf;
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos)) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
  return text;
}

// A function stage checked against the registry.
struct ResolvedTransform {
  const StageSpec* stage;
  catalog::ArtifactRecord artifact;
};

// Everything the driver knows before it starts tasks.
struct JobPlan {
  std::vector<ResolvedTransform> transforms;
  const StageSpec* dedup = nullptr;
  std::vector<std::string> objects;
  int64_t input_bytes = 0;
  std::shared_ptr<arrow::Schema> scan_schema;
  std::string scan_schema_id;
  std::shared_ptr<arrow::Schema> output_schema;
};

arrow::Status ResolveTransforms(const JobManifest& job, catalog::Registry* registry,
                                JobPlan* plan) {
  for (const StageSpec& stage : job.stages) {
    if (stage.kind == StageSpec::Kind::kDedup) {
      if (plan->dedup != nullptr) {
        return arrow::Status::NotImplemented(stage.location,
                                             ": not supported: more than one dedup stage");
      }
      plan->dedup = &stage;
      continue;
    }
    if (plan->dedup != nullptr) {
      return arrow::Status::NotImplemented(
          stage.location, ": not supported: a function stage after a dedup stage; put dedup last");
    }
    ARROW_ASSIGN_OR_RAISE(auto artifact, registry->GetArtifact(stage.pin_artifact_hash));
    if (!artifact.has_value()) {
      return arrow::Status::Invalid(
          stage.location, ": pin_artifact_hash ", stage.pin_artifact_hash, " of stage '",
          stage.qualified_name, "' is not in the registry ", registry->database()->display_url(),
          "; publish it with `sluice transform publish`");
    }
    if (artifact->qualified_name != stage.qualified_name) {
      return arrow::Status::Invalid(stage.location, ": qualified_name '", stage.qualified_name,
                                    "' does not match the pinned artifact, which is '",
                                    artifact->qualified_name, "'");
    }
    ARROW_ASSIGN_OR_RAISE(auto specs, registry->SpecsForArtifact(stage.pin_artifact_hash));
    if (specs.empty()) {
      return arrow::Status::Invalid(stage.location, ": pin ", stage.pin_artifact_hash,
                                    " has no signed pipeline spec in the registry");
    }
    auto verified = catalog::VerifyPipelineSpec(specs.front(), registry);
    if (!verified.ok()) {
      return arrow::Status::Invalid(stage.location, ": refusing stage '", stage.qualified_name,
                                    "': ", verified.status().message());
    }
    if (verified->artifact_blake3 != stage.pin_artifact_hash) {
      return arrow::Status::Invalid(stage.location, ": the signed spec pins ",
                                    verified->artifact_blake3, ", not ", stage.pin_artifact_hash);
    }
    if (!plan->transforms.empty()) {
      const auto& prev = plan->transforms.back().artifact;
      if (prev.output_schema != artifact->input_schema) {
        return arrow::Status::TypeError(stage.location, ": stage '", stage.qualified_name,
                                        "' reads ", artifact->input_schema,
                                        " but the stage before "
                                        "it writes ",
                                        prev.output_schema);
      }
    }
    plan->transforms.push_back({&stage, *artifact});
  }
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::Schema>> FileSchema(storage::ObjectStore* store,
                                                         const std::string& key,
                                                         const std::string& format) {
  ARROW_ASSIGN_OR_RAISE(auto file, store->OpenForRead(key));
  if (format == "parquet") {
    auto reader = parquet::arrow::OpenFile(file, arrow::default_memory_pool());
    if (!reader.ok()) {
      return arrow::Status::Invalid("object '", key,
                                    "': not a Parquet file: ", reader.status().message());
    }
    std::shared_ptr<arrow::Schema> schema;
    ARROW_RETURN_NOT_OK((*reader)->GetSchema(&schema));
    return schema;
  }
  auto reader = arrow::ipc::RecordBatchFileReader::Open(file);
  if (!reader.ok()) {
    return arrow::Status::Invalid("object '", key,
                                  "': not an Arrow IPC file: ", reader.status().message());
  }
  return (*reader)->schema();
}

arrow::Status ResolveSource(const JobManifest& job, storage::ObjectStore* store, JobPlan* plan) {
  const SourceSpec& source = job.source;
  if (source.kind == "jsonl") {
    ARROW_ASSIGN_OR_RAISE(auto listed, store->List(source.prefix));
    const int64_t limit = source.limit.value_or(INT64_MAX);
    for (const auto& o : listed) {
      if (static_cast<int64_t>(plan->objects.size()) >= limit) break;
      plan->objects.push_back(o.key);
      plan->input_bytes += o.size;
    }
  } else {
    ARROW_ASSIGN_OR_RAISE(
        plan->objects, storage::CommittedFiles(store, source.prefix,
                                               source.kind == "parquet" ? ".parquet" : ".arrow"));
  }
  if (plan->objects.empty()) {
    return arrow::Status::Invalid(job.file, ": dataflow.source.prefix '", source.prefix,
                                  "' has no ", source.kind, " objects in store ",
                                  store->display_url());
  }
  if (source.limit.has_value() && static_cast<int64_t>(plan->objects.size()) > *source.limit) {
    plan->objects.resize(static_cast<size_t>(*source.limit));
  }
  if (!plan->transforms.empty()) {
    plan->scan_schema_id = plan->transforms.front().artifact.input_schema;
    ARROW_ASSIGN_OR_RAISE(const exec::SchemaEntry* entry, exec::FindSchema(plan->scan_schema_id));
    plan->scan_schema = entry->schema;
  } else if (source.kind == "jsonl") {
    return arrow::Status::NotImplemented(
        job.file,
        ": not supported: a jsonl source needs a function stage, whose input schema "
        "says how to parse it");
  } else {
    // The schema is read once here and carried in the plan; workers check every file against it.
    ARROW_ASSIGN_OR_RAISE(plan->scan_schema, FileSchema(store, plan->objects.front(), source.kind));
  }
  if (!plan->transforms.empty()) {
    ARROW_ASSIGN_OR_RAISE(const exec::SchemaEntry* out,
                          exec::FindSchema(plan->transforms.back().artifact.output_schema));
    plan->output_schema = out->schema;
  } else {
    plan->output_schema = plan->scan_schema;
  }
  if (plan->dedup != nullptr && plan->output_schema->GetFieldIndex(plan->dedup->key) < 0) {
    std::string columns;
    for (const auto& f : plan->output_schema->fields()) {
      columns += (columns.empty() ? "" : ", ") + f->name();
    }
    return arrow::Status::Invalid(plan->dedup->location, ": dedup key '", plan->dedup->key,
                                  "' is not a column of the stage's input (columns: ", columns,
                                  ")");
  }
  return arrow::Status::OK();
}

json PinsJson(const JobPlan& plan) {
  json pins = json::array();
  for (const auto& t : plan.transforms) {
    pins.push_back({{"qualified_name", t.artifact.qualified_name},
                    {"artifact_blake3", t.artifact.artifact_blake3}});
  }
  return pins;
}

// Best effort: removes objects under a prefix (a failed run's parts, a finished run's shuffle).
void RemovePrefix(storage::ObjectStore* store, const std::string& prefix) {
  auto listed = store->List(prefix);
  if (!listed.ok()) return;
  for (const auto& o : *listed) (void)store->Delete(o.key);
}

}  // namespace

bool IsValidRunId(const std::string& run_id) {
  static const std::regex kPattern("^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$");
  return std::regex_match(run_id, kPattern);
}

std::string SinkManifestKey(const std::string& sink_path) { return sink_path + "/_manifest.json"; }

arrow::Result<SubmitResult> Submit(const Config& config, const SubmitOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (!IsValidRunId(options.run_id)) {
    return arrow::Status::Invalid("invalid run id '", options.run_id,
                                  "': use letters, digits, '.', '_' and '-' (at most 128)");
  }
  ARROW_ASSIGN_OR_RAISE(std::string text, ReadTextFile(options.manifest_path));
  const std::string manifest_digest = artifact::Blake3(text).ToHex();
  ARROW_ASSIGN_OR_RAISE(JobManifest job, ParseJobManifest(text, options.manifest_path));
  ARROW_ASSIGN_OR_RAISE(auto store, storage::ObjectStore::Open(config.store_url));
  ARROW_ASSIGN_OR_RAISE(auto registry, catalog::Registry::Open(config.database_url));

  SubmitResult result;
  result.run_id = options.run_id;
  result.store_url = store->display_url();
  result.sink_path = Replace(job.sink.path, "{run_id}", options.run_id);
  while (!result.sink_path.empty() && result.sink_path.back() == '/') result.sink_path.pop_back();
  const std::string manifest_key = SinkManifestKey(result.sink_path);
  SLUICE_RETURN_NOT_OK_CTX(storage::ObjectStore::ValidateKey(manifest_key),
                           options.manifest_path + ": dataflow.sink.path");

  // A committed run id is a no-op with the same manifest, and refused with another.
  ARROW_ASSIGN_OR_RAISE(bool committed, store->Exists(manifest_key));
  if (committed) {
    ARROW_ASSIGN_OR_RAISE(auto bytes, store->Get(manifest_key));
    json doc = json::parse(bytes->ToString(), nullptr, false);
    const std::string previous = doc.is_object() ? doc.value("job_manifest_blake3", "") : "";
    if (previous != manifest_digest) {
      return arrow::Status::Invalid("run id '", options.run_id, "' was already committed at ",
                                    result.sink_path, " with a different manifest (blake3 ",
                                    previous, "); choose a new run id");
    }
    result.already_committed = true;
    result.rows_out = doc.value("rows", int64_t{0});
    return result;
  }
  ARROW_ASSIGN_OR_RAISE(auto previous_run, registry->GetRun(options.run_id));
  if (previous_run.has_value() && previous_run->manifest_blake3 != manifest_digest) {
    return arrow::Status::Invalid("run id '", options.run_id,
                                  "' was used before with a different manifest (blake3 ",
                                  previous_run->manifest_blake3, "); choose a new run id");
  }

  JobPlan plan;
  ARROW_RETURN_NOT_OK(ResolveTransforms(job, registry.get(), &plan));
  ARROW_RETURN_NOT_OK(ResolveSource(job, store.get(), &plan));

  // Compile into stages of fragments.
  const int workers = std::max(1, options.workers);
  const plan::SessionSpec session{config.store_url, config.home + "/cache"};
  const std::string shuffle_root = "_sluice/shuffle/" + options.run_id + "-" + RandomHex();
  const std::string ext = job.sink.kind == "parquet" ? ".parquet" : ".arrow";
  auto part_key = [&](int p) {
    char name[32];
    std::snprintf(name, sizeof(name), "part-%05d", p);
    return result.sink_path + "/" + name + ext;
  };
  const int64_t n_objects = static_cast<int64_t>(plan.objects.size());
  // Each map task is a process that loads Arrow and the transforms (tens of milliseconds), so
  // tasks get about 32 MiB of input each, between one and four rounds of the worker pool.
  const int64_t rounds = std::clamp<int64_t>(
      (plan.input_bytes + int64_t{workers} * (32 << 20) - 1) / (int64_t{workers} * (32 << 20)), 1,
      4);
  const int64_t n_maps = std::max<int64_t>(1, std::min<int64_t>(n_objects, workers * rounds));
  const int reduce_partitions = workers;
  std::vector<plan::Fragment> maps, reduces;
  for (int64_t m = 0; m < n_maps; ++m) {
    const int64_t begin = n_objects * m / n_maps, end = n_objects * (m + 1) / n_maps;
    plan::Fragment f{options.run_id, 0, static_cast<int32_t>(m), 1, session, {}};
    f.operators.push_back(plan::ScanObjects{
        job.source.kind,
        std::vector<std::string>(plan.objects.begin() + begin, plan.objects.begin() + end), begin,
        plan.scan_schema_id, plan.scan_schema, job.source.on_error == "skip"});
    for (const auto& t : plan.transforms) {
      ARROW_ASSIGN_OR_RAISE(const exec::SchemaEntry* out,
                            exec::FindSchema(t.artifact.output_schema));
      f.operators.push_back(
          plan::CallTransform{t.artifact.qualified_name, t.artifact.artifact_blake3, out->schema});
    }
    if (plan.dedup != nullptr) {
      f.operators.push_back(plan::HashExchange{plan.dedup->key, reduce_partitions,
                                               shuffle_root + "/s0/m" + std::to_string(m)});
    } else {
      f.operators.push_back(plan::WriteSink{job.sink.kind, part_key(static_cast<int>(m))});
    }
    maps.push_back(std::move(f));
  }
  if (plan.dedup != nullptr) {
    auto seq_schema =
        plan.output_schema->AddField(plan.output_schema->num_fields(),
                                     arrow::field(plan::kSequenceColumn, arrow::int64(), false));
    ARROW_RETURN_NOT_OK(seq_schema.status());
    for (int r = 0; r < reduce_partitions; ++r) {
      plan::Fragment f{options.run_id, 1, r, 1, session, {}};
      std::vector<std::string> keys;
      for (int64_t m = 0; m < n_maps; ++m) {
        keys.push_back(shuffle_root + "/s0/m" + std::to_string(m) + "/part-" + std::to_string(r) +
                       ".arrow");
      }
      f.operators.push_back(plan::ScanShuffle{keys, *seq_schema});
      f.operators.push_back(plan::DedupFirst{plan.dedup->key});
      f.operators.push_back(plan::WriteSink{job.sink.kind, part_key(r)});
      reduces.push_back(std::move(f));
    }
  }

  catalog::RunRecord run{options.run_id,
                         options.user_id,
                         manifest_digest,
                         PinsJson(plan).dump(),
                         "running",
                         0,
                         0,
                         0,
                         "",
                         "",
                         catalog::NowUtc(),
                         "",
                         result.sink_path};
  ARROW_RETURN_NOT_OK(registry->UpsertRun(run));

  Progress::Options progress_options;
  progress_options.total = n_objects;
  progress_options.unit = "objects";
  progress_options.secondary_unit = "rows";
  Progress progress("run " + options.run_id, progress_options);
  dist::PoolOptions pool{workers, 3, options.worker_binary, nullptr};
  pool.on_report = [&](const exec::TaskReport& r) { progress.Advance(r.objects, r.rows_out); };
  pool.task_timeout_seconds =
      job.limits.task_timeout_seconds.value_or(dist::kDefaultTaskTimeoutSeconds);
  pool.task_memory_bytes = job.limits.task_memory_mb.value_or(0) << 20;

  json timings = json::object();
  std::vector<exec::TaskReport> reports;
  auto run_stages = [&]() -> arrow::Status {
    auto t0 = std::chrono::steady_clock::now();
    ARROW_ASSIGN_OR_RAISE(auto map_reports, dist::RunStage(maps, pool));
    timings["s0"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    reports = map_reports;
    if (!reduces.empty()) {
      t0 = std::chrono::steady_clock::now();
      ARROW_ASSIGN_OR_RAISE(auto reduce_reports, dist::RunStage(reduces, pool));
      timings["s1"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      reports.insert(reports.end(), reduce_reports.begin(), reduce_reports.end());
    }
    return arrow::Status::OK();
  };
  arrow::Status st = run_stages();
  progress.Finish();

  for (const auto& r : reports) {
    result.objects += r.objects;
    result.records_in += r.records_in;
    result.bad_records += r.bad_records;
    result.duplicates_dropped += r.duplicates_dropped;
    for (const auto& f : r.files) {
      result.files.push_back(f);
      result.rows_out += f.rows;
    }
  }
  std::sort(result.files.begin(), result.files.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });

  // Commit: the manifest object is written last; only then does the output exist.
  if (st.ok()) {
    json files = json::array();
    for (const auto& f : result.files) {
      files.push_back({{"key", f.key}, {"rows", f.rows}, {"bytes", f.bytes}, {"blake3", f.blake3}});
    }
    json manifest = {{"format", storage::kSinkManifestFormat},
                     {"run_id", options.run_id},
                     {"job_manifest_blake3", manifest_digest},
                     {"pins", PinsJson(plan)},
                     {"file_format", job.sink.kind},
                     {"rows", result.rows_out},
                     {"files", files},
                     {"committed_at", catalog::NowUtc()}};
    st = store->Put(manifest_key, arrow::Buffer::FromString(manifest.dump(2) + "\n"));
  }
  RemovePrefix(store.get(), shuffle_root + "/");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.rows_in = result.records_in;
  run.rows_out = result.rows_out;
  run.duplicates_dropped = result.duplicates_dropped;
  run.stage_timings = timings.dump();
  run.finished_at = catalog::NowUtc();
  if (!st.ok()) {
    // Nothing half-written may look like output: remove the parts this run wrote.
    RemovePrefix(store.get(), result.sink_path + "/");
    run.status = "failed";
    run.error = st.ToString();
    (void)registry->UpsertRun(run);
    return st;
  }
  run.status = "committed";
  ARROW_RETURN_NOT_OK(registry->UpsertRun(run));
  return result;
}

}  // namespace sluice::pipeline
