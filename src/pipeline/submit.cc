#include "pipeline/submit.h"

#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <parquet/arrow/reader.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>

#include "artifact/blake3_digest.h"
#include "artifact/transform_identity.h"
#include "catalog/pipeline_spec.h"
#include "catalog/registry.h"
#include "catalog/run_lease.h"
#include "catalog/trust.h"
#include "common/progress.h"
#include "common/status.h"
#include "dist/ray_executor.h"
#include "dist/stage_cutter.h"
#include "dist/stage_scheduler.h"
#include "pipeline/in_process.h"
#include "pipeline/manifest.h"
#include "pipeline/run_files.h"
#include "plan/fragment.h"
#include "storage/ipc_stream.h"
#include "storage/object_store.h"
#include "storage/schema_message.h"
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
  /// The Arrow schemas the artifact declares; null for `any`, and for an artifact whose
  /// identity carries none.
  std::shared_ptr<arrow::Schema> input_schema;
  std::shared_ptr<arrow::Schema> output_schema;
};

// A registered artifact's Arrow schema, or null when it has none.
arrow::Result<std::shared_ptr<arrow::Schema>> ArtifactSchema(const StageSpec& stage,
                                                             const std::vector<uint8_t>& bytes,
                                                             const char* column) {
  if (bytes.empty()) return nullptr;
  return storage::ReadSchemaMessage(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
      stage.location + ": stage '" + stage.qualified_name + "': the registry's " + column +
          " of artifact " + stage.pin_artifact_hash);
}

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

// A function stage runs only what a trusted publisher signed: a spec for its pin whose
// signature holds, whose signer this machine trusts, and whose signed pipeline text has this
// very stage (name and pin). Checking the signature alone would run any pin that someone
// signed for another purpose.
arrow::Status CheckSignedSpec(const StageSpec& stage, catalog::Registry* registry,
                              const catalog::TrustedPublishers& trusted) {
  ARROW_ASSIGN_OR_RAISE(auto specs, registry->SpecsForArtifact(stage.pin_artifact_hash));
  if (specs.empty()) {
    return arrow::Status::Invalid(stage.location, ": pin ", stage.pin_artifact_hash,
                                  " has no signed pipeline spec in the registry");
  }
  std::string why;
  for (const auto& record : specs) {
    auto verified = catalog::VerifyPipelineSpec(record, registry);
    if (!verified.ok()) {
      why = verified.status().message();
      continue;
    }
    if (!trusted.Contains(record.publisher_id)) {
      why = "pipeline spec '" + record.name + "' is signed by publisher " + record.publisher_id +
            ", which this machine does not trust (trust it with `sluice auth trust " +
            record.publisher_id + "`)";
      continue;
    }
    auto signed_pipeline =
        ParsePipelineManifest(verified->manifest_toml, "signed spec '" + record.name + "'");
    if (!signed_pipeline.ok()) {
      why = signed_pipeline.status().message();
      continue;
    }
    const bool listed = std::any_of(
        signed_pipeline->stages.begin(), signed_pipeline->stages.end(), [&](const StageSpec& s) {
          return s.kind == StageSpec::Kind::kFunction && s.qualified_name == stage.qualified_name &&
                 s.pin_artifact_hash == stage.pin_artifact_hash;
        });
    if (verified->artifact_blake3 != stage.pin_artifact_hash ||
        verified->transform_name != stage.qualified_name || !listed) {
      why = "the signed pipeline spec '" + record.name + "' does not have a stage '" +
            stage.qualified_name + "' pinned to " + stage.pin_artifact_hash;
      continue;
    }
    return arrow::Status::OK();
  }
  return arrow::Status::Invalid(stage.location, ": refusing stage '", stage.qualified_name,
                                "': ", why);
}

arrow::Status ResolveTransforms(const JobManifest& job, catalog::Registry* registry,
                                const catalog::TrustedPublishers& trusted, JobPlan* plan) {
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
    ARROW_RETURN_NOT_OK(CheckSignedSpec(stage, registry, trusted));
    ResolvedTransform resolved{&stage, *artifact, nullptr, nullptr};
    ARROW_ASSIGN_OR_RAISE(resolved.input_schema, ArtifactSchema(stage, artifact->input_arrow_schema,
                                                                "input_arrow_schema"));
    ARROW_ASSIGN_OR_RAISE(
        resolved.output_schema,
        ArtifactSchema(stage, artifact->output_arrow_schema, "output_arrow_schema"));
    if (!plan->transforms.empty()) {
      // `any` on either side is checked when the data flows (the worker checks what arrives
      // against the declared input schema); two declared schemas must agree now.
      const ResolvedTransform& prev = plan->transforms.back();
      const bool typed = prev.artifact.output_schema != artifact::kAnySchemaId &&
                         artifact->input_schema != artifact::kAnySchemaId;
      if (typed && prev.artifact.output_schema != artifact->input_schema) {
        return arrow::Status::TypeError(
            stage.location, ": stage '", stage.qualified_name, "' reads ", artifact->input_schema,
            " but the stage before it writes ", prev.artifact.output_schema);
      }
      if (typed && prev.output_schema != nullptr && resolved.input_schema != nullptr) {
        ARROW_RETURN_NOT_OK(storage::CheckSchema(
            *resolved.input_schema, *prev.output_schema,
            stage.location + ": stage '" + stage.qualified_name + "' reads schema '" +
                artifact->input_schema + "' as the stage before it declares it"));
      }
    }
    plan->transforms.push_back(std::move(resolved));
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
  const ResolvedTransform* first = plan->transforms.empty() ? nullptr : &plan->transforms.front();
  if (first != nullptr) plan->scan_schema_id = first->artifact.input_schema;
  if (first != nullptr && first->input_schema != nullptr) {
    // The first stage's declared schema parses a JSONL source and is what Parquet and IPC
    // sources must hold.
    plan->scan_schema = first->input_schema;
  } else if (source.kind == "jsonl") {
    if (first == nullptr) {
      return arrow::Status::NotImplemented(
          job.file,
          ": not supported: a jsonl source needs a function stage, whose input schema "
          "says how to parse it");
    }
    if (first->artifact.input_schema == artifact::kAnySchemaId) {
      return arrow::Status::Invalid(
          first->stage->location, ": stage '", first->stage->qualified_name,
          "' reads schema 'any', but it follows a jsonl source, which is parsed against the "
          "first stage's input schema: the first stage must declare its input schema");
    }
    return arrow::Status::Invalid(
        first->stage->location, ": stage '", first->stage->qualified_name,
        "' declares input schema '", first->artifact.input_schema,
        "', but its artifact carries no Arrow schema to parse the jsonl source with (it was "
        "built before schemas travelled with artifacts); rebuild and publish it");
  } else {
    // The schema is read once here and carried in the plan; workers check every file against
    // it. A first stage reading `any` takes what the files hold.
    ARROW_ASSIGN_OR_RAISE(plan->scan_schema, FileSchema(store, plan->objects.front(), source.kind));
  }
  // Null when the last stage writes `any`: then its first stream fixes the schema.
  plan->output_schema =
      plan->transforms.empty() ? plan->scan_schema : plan->transforms.back().output_schema;
  if (plan->dedup != nullptr && plan->output_schema == nullptr) {
    const ResolvedTransform& last = plan->transforms.back();
    return arrow::Status::NotImplemented(
        plan->dedup->location, ": not supported: dedup after stage '", last.stage->qualified_name,
        "', whose output schema '", last.artifact.output_schema,
        "' has no Arrow schema; dedup needs the stage before it to declare its output schema");
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

// Best effort: cleanup must not hide the error that made it necessary.
void RemovePrefix(storage::ObjectStore* store, const std::string& prefix) {
  (void)RemoveOwnedPrefix(store, prefix);
}

// True when one key prefix contains the other: a job reading one while writing the other
// would read its own output, or delete its input.
bool Overlaps(const std::string& sink_path, const std::string& other, bool other_is_prefix) {
  const std::string sink = sink_path + "/";
  if (other_is_prefix) {
    return sink.starts_with(other) || other.starts_with(sink);
  }
  const std::string folder = other + "/";
  return sink.starts_with(folder) || folder.starts_with(sink);
}

// Refuses a sink path that overlaps the job's source or the output of another run, before any
// work starts.
arrow::Status CheckSinkOwnership(const JobManifest& job, const std::string& run_id,
                                 const std::string& sink_path, storage::ObjectStore* store,
                                 catalog::Registry* registry) {
  const std::string where = job.file + ": dataflow.sink.path '" + sink_path + "'";
  if (Overlaps(sink_path, job.source.prefix, /*other_is_prefix=*/true)) {
    return arrow::Status::Invalid(where, " overlaps dataflow.source.prefix '", job.source.prefix,
                                  "': the run would read its own output or delete its input");
  }
  ARROW_ASSIGN_OR_RAISE(auto runs, registry->ListRuns(std::numeric_limits<int32_t>::max()));
  const int64_t now = catalog::NowSeconds();
  for (const auto& r : runs) {
    if (r.run_id == run_id || r.sink_path.empty()) continue;
    const std::string status = catalog::EffectiveStatus(r, now);
    if (status != "committed" && status != "running") continue;
    if (Overlaps(sink_path, r.sink_path, /*other_is_prefix=*/false)) {
      return arrow::Status::Invalid(where, " overlaps the output of run '", r.run_id, "' (", status,
                                    " at '", r.sink_path, "'); choose another sink path");
    }
  }
  // Outputs this registry does not know (another registry, or copied in) are refused too.
  for (std::string folder = sink_path;;) {
    ARROW_ASSIGN_OR_RAISE(bool committed, store->Exists(storage::SinkManifestKey(folder)));
    if (committed && folder != sink_path) {
      return arrow::Status::Invalid(where, " is inside the committed output at '", folder, "'");
    }
    const size_t slash = folder.rfind('/');
    if (slash == std::string::npos) break;
    folder = folder.substr(0, slash);
  }
  ARROW_ASSIGN_OR_RAISE(auto inside, store->List(sink_path + "/"));
  for (const auto& o : inside) {
    if (o.key.ends_with(std::string("/") + storage::kSinkManifestName) &&
        o.key != storage::SinkManifestKey(sink_path)) {
      return arrow::Status::Invalid(where, " contains the committed output '", o.key, "'");
    }
  }
  return arrow::Status::OK();
}

// Renews the attempt's lease on its own registry connection until stopped.
class LeaseKeeper {
 public:
  LeaseKeeper(std::string database_url, std::string run_id, std::string attempt_id)
      : thread_([this, url = std::move(database_url), run = std::move(run_id),
                 attempt = std::move(attempt_id)] { Loop(url, run, attempt); }) {}
  ~LeaseKeeper() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void Loop(const std::string& url, const std::string& run_id, const std::string& attempt_id) {
    auto registry = catalog::Registry::Open(url);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::seconds(catalog::kHeartbeatSeconds));
      if (stop_ || !registry.ok()) continue;
      lock.unlock();
      (void)(*registry)->Heartbeat(run_id, attempt_id, catalog::NowSeconds());
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Transforms must not read the signing keys or write the registry behind its back.
std::vector<std::string> HiddenPaths(const Config& config) {
  std::vector<std::string> paths = {config.home + "/keys"};
  const std::string sqlite = "sqlite://";
  if (config.database_url.rfind(sqlite, 0) == 0) {
    paths.push_back(config.database_url.substr(sqlite.size()));
  }
  return paths;
}

}  // namespace

bool IsValidRunId(const std::string& run_id) {
  static const std::regex kPattern("^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$");
  return std::regex_match(run_id, kPattern);
}

std::string SinkManifestKey(const std::string& sink_path) {
  return storage::SinkManifestKey(sink_path);
}

arrow::Result<SubmitResult> Submit(const Config& config, const SubmitOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (!IsValidRunId(options.run_id)) {
    return arrow::Status::Invalid("invalid run id '", options.run_id,
                                  "': use letters, digits, '.', '_' and '-' (at most 128)");
  }
  if (options.workers < 0) {
    return arrow::Status::Invalid("--workers ", options.workers,
                                  ": use 0 (every task in this process) or a number of workers");
  }
  if (options.executor != "local" && options.executor != "ray") {
    return arrow::Status::Invalid("--executor '", options.executor, "': use local or ray");
  }
  const bool on_ray = options.executor == "ray";
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
  ARROW_ASSIGN_OR_RAISE(auto previous_run, registry->GetRun(options.run_id));
  ARROW_ASSIGN_OR_RAISE(auto committed, storage::ReadSinkManifest(store.get(), result.sink_path));
  if (committed.has_value()) {
    if (committed->run_id != options.run_id) {
      return arrow::Status::Invalid(options.manifest_path, ": dataflow.sink.path '",
                                    result.sink_path, "' holds the committed output of run '",
                                    committed->run_id, "'; choose another sink path");
    }
    const std::string& previous = committed->job_manifest_blake3;
    if (previous != manifest_digest) {
      return arrow::Status::Invalid("run id '", options.run_id, "' was already committed at ",
                                    result.sink_path, " with a different manifest (blake3 ",
                                    previous, "); choose a new run id");
    }
    if (previous_run.has_value() && previous_run->status != "committed" &&
        catalog::IsAbandoned(*previous_run, catalog::NowSeconds())) {
      // Its driver died between the commit and recording it; the manifest is the truth.
      previous_run->status = "committed";
      previous_run->finished_at = catalog::NowUtc();
      (void)registry->UpdateClaimedRun(*previous_run);
    }
    result.already_committed = true;
    result.rows_out = committed->rows;
    return result;
  }
  std::string replaces_attempt;
  if (previous_run.has_value()) {
    if (previous_run->manifest_blake3 != manifest_digest) {
      return arrow::Status::Invalid("run id '", options.run_id,
                                    "' was used before with a different manifest (blake3 ",
                                    previous_run->manifest_blake3, "); choose a new run id");
    }
    const int64_t now = catalog::NowSeconds();
    if (previous_run->status == "running" && !catalog::IsAbandoned(*previous_run, now)) {
      return arrow::Status::Invalid(
          "run id '", options.run_id, "' is already running (driver pid ", previous_run->driver_pid,
          " on host ", previous_run->driver_host, ", last heartbeat ",
          now - previous_run->heartbeat_at, " s ago); wait for it or choose a new run id");
    }
    if (previous_run->status == "committed") {
      return arrow::Status::Invalid("run id '", options.run_id, "' is recorded as committed, but ",
                                    manifest_key, " is missing from ", store->display_url(),
                                    "; choose a new run id");
    }
    replaces_attempt = previous_run->attempt_id.empty() ? std::string(catalog::Registry::kNoAttempt)
                                                        : previous_run->attempt_id;
  }

  JobPlan plan;
  ARROW_ASSIGN_OR_RAISE(auto trusted, catalog::TrustedPublishers::Load(config.home + "/keys"));
  ARROW_RETURN_NOT_OK(ResolveTransforms(job, registry.get(), trusted, &plan));
  ARROW_RETURN_NOT_OK(ResolveSource(job, store.get(), &plan));
  ARROW_RETURN_NOT_OK(
      CheckSinkOwnership(job, options.run_id, result.sink_path, store.get(), registry.get()));

  // Ray is reached before the run is claimed: a cluster that cannot be reached leaves no trace.
  std::shared_ptr<dist::RayExecutor> ray;
  if (on_ray) {
    dist::RayOptions ray_options = dist::RayOptionsFromEnvironment();
    if (!options.worker_binary.empty()) ray_options.worker_binary = options.worker_binary;
    ray_options.task_timeout_seconds =
        job.limits.task_timeout_seconds.value_or(dist::kDefaultTaskTimeoutSeconds);
    ray_options.task_memory_bytes = job.limits.task_memory_mb.value_or(0) << 20;
    ray_options.hidden_paths = HiddenPaths(config);
    ARROW_ASSIGN_OR_RAISE(ray, dist::RayExecutor::Start(std::move(ray_options)));
  }

  // Claim the run id before anything is written: of two submits, one gets it and the other
  // stops here having touched nothing.
  const std::string attempt_id = RandomHex();
  const catalog::DriverIdentity driver = catalog::ThisDriver();
  catalog::RunRecord run;
  run.run_id = options.run_id;
  run.user_id = options.user_id;
  run.manifest_blake3 = manifest_digest;
  run.pins = PinsJson(plan).dump();
  run.status = "running";
  run.started_at = catalog::NowUtc();
  run.sink_path = result.sink_path;
  run.attempt_id = attempt_id;
  run.driver_host = driver.host;
  run.driver_pid = driver.pid;
  run.driver_start = driver.start;
  run.heartbeat_at = catalog::NowSeconds();
  ARROW_ASSIGN_OR_RAISE(bool claimed, registry->ClaimRun(run, replaces_attempt));
  if (!claimed) {
    return arrow::Status::Invalid("run id '", options.run_id,
                                  "' was just claimed by another submit; nothing was done");
  }
  // Two submits with different run ids and overlapping sink paths both passed the check above
  // before either had claimed; now each sees the other as running, and neither writes.
  if (arrow::Status st =
          CheckSinkOwnership(job, options.run_id, result.sink_path, store.get(), registry.get());
      !st.ok()) {
    run.status = "failed";
    run.error = st.ToString();
    run.finished_at = catalog::NowUtc();
    (void)registry->UpdateClaimedRun(run);
    return st;
  }
  LeaseKeeper lease(config.database_url, options.run_id, attempt_id);
  // True while this attempt still holds the run: a driver whose lease lapsed (stalled for a
  // minute) may have been taken over, and must then neither commit nor remove anything shared.
  auto still_ours = [&]() -> arrow::Result<bool> {
    ARROW_ASSIGN_OR_RAISE(auto now, registry->GetRun(options.run_id));
    return now.has_value() && now->attempt_id == attempt_id;
  };
  if (previous_run.has_value() && !previous_run->attempt_id.empty()) {
    // A failed or abandoned attempt of this run: its files go before this one starts.
    ARROW_RETURN_NOT_OK(
        RemoveAttemptParts(store.get(), result.sink_path, previous_run->attempt_id).status());
    RemovePrefix(store.get(), ShuffleFolder(options.run_id, previous_run->attempt_id) + "/");
  }
  // The marker goes first: from now on the sink path reads as "not committed" until the
  // manifest is written, whatever happens to this process.
  {
    json marker = {{"format", storage::kSinkMarkerFormat},
                   {"run_id", options.run_id},
                   {"attempt_id", attempt_id},
                   {"started_at", run.started_at}};
    arrow::Status st = store->Put(storage::SinkMarkerKey(result.sink_path),
                                  arrow::Buffer::FromString(marker.dump(2) + "\n"));
    if (!st.ok()) {
      run.status = "failed";
      run.error = st.ToString();
      run.finished_at = catalog::NowUtc();
      (void)registry->UpdateClaimedRun(run);
      return st;
    }
  }

  // Compile into stages of fragments. In-process (--workers 0) tasks run one at a time, so the
  // job is cut as for one worker.
  const bool in_process = options.workers == 0 && !on_ray;
  const int workers =
      on_ray && options.workers == 0 ? ray->cluster_cpus() : std::max(1, options.workers);
  const plan::SessionSpec session{config.store_url, config.home + "/cache", {}, {}};
  const std::string shuffle_root = ShuffleFolder(options.run_id, attempt_id);
  const std::string ext = job.sink.kind == "parquet" ? ".parquet" : ".arrow";
  auto part_key = [&](int p) { return PartKey(result.sink_path, p, attempt_id, ext); };
  const int64_t n_objects = static_cast<int64_t>(plan.objects.size());
  // Each map task is a process that loads Arrow and the transforms (tens of milliseconds), so
  // tasks get about 32 MiB of input each, between one and four rounds of the worker pool.
  const int64_t rounds = std::clamp<int64_t>(
      (plan.input_bytes + int64_t{workers} * (32 << 20) - 1) / (int64_t{workers} * (32 << 20)), 1,
      4);
  const int64_t n_maps = std::max<int64_t>(1, std::min<int64_t>(n_objects, workers * rounds));
  const int reduce_partitions = workers;
  // The job as one plan: its objects, its transforms and, with a dedup, an exchange that
  // hash-partitions rows on the dedup key (with their hidden sequence column) before the sink.
  // The stage cutter (dist/stage_cutter.h) makes a map stage of what is below the exchange, one
  // task per run of objects, and a dedup stage of one task per partition; map task m's shuffle
  // files are `<root>/s0/s0p<m>-<attempt>/part-<r>.arrow`.
  std::vector<plan::PlanNodeFields> steps = {
      plan::Step(plan::ScanObjects{job.source.kind, plan.objects, 0, plan.scan_schema_id,
                                   plan.scan_schema, job.source.on_error == "skip"})};
  for (const auto& t : plan.transforms) {
    // A null output schema (`any`) is fixed by the first stream the stage emits.
    steps.push_back(plan::Step(plan::CallTransform{t.artifact.qualified_name,
                                                   t.artifact.artifact_blake3, t.output_schema}));
  }
  if (plan.dedup != nullptr) {
    plan::PlanNodeFields exchange;
    exchange.kind = plan::PlanNode::Kind::kExchange;
    exchange.exchange.keys = {plan.dedup->key};
    exchange.exchange.partitions = reduce_partitions;
    ARROW_ASSIGN_OR_RAISE(
        exchange.exchange.schema,
        plan.output_schema->AddField(plan.output_schema->num_fields(),
                                     arrow::field(plan::kSequenceColumn, arrow::int64(), false)));
    steps.push_back(std::move(exchange));
    steps.push_back(plan::Step(plan::DedupFirst{plan.dedup->key}));
  }
  steps.push_back(plan::Step(plan::WriteSink{job.sink.kind, ""}));
  const std::unique_ptr<plan::PlanNode> job_plan = plan::Chain(std::move(steps));

  dist::CutOptions cut;
  cut.run_id = options.run_id;
  cut.session = session;
  cut.shuffle_folder = shuffle_root;
  // Stage 0 maps; with a dedup, stage 1 (the last, below no exchange) dedups.
  const bool dedup = plan.dedup != nullptr;
  cut.stage_id = [dedup](const plan::PlanNode&, const plan::PlanNode* exchange) {
    return dedup && exchange == nullptr ? 1 : 0;
  };
  cut.stage_name = [dedup](const plan::PlanNode&, const plan::PlanNode* exchange, int id) {
    return "stage " + std::to_string(id) + (dedup && exchange == nullptr ? " (dedup)" : " (map)");
  };
  cut.split_tasks = [n_maps](const plan::PlanNode&) { return static_cast<int>(n_maps); };
  // Map task m reads a contiguous run of the sorted objects; object i keeps its global index,
  // which orders rows for dedup.
  cut.split_share = [&, n_maps, n_objects](
                        const plan::PlanNode& leaf,
                        int task) -> arrow::Result<std::unique_ptr<plan::PlanNode>> {
    const int64_t begin = n_objects * task / n_maps, end = n_objects * (task + 1) / n_maps;
    auto scan = plan::CopyPlan(leaf);
    scan->objects.keys.assign(plan.objects.begin() + begin, plan.objects.begin() + end);
    scan->objects.first_object_index = begin;
    return scan;
  };
  // Task t of the last stage writes sink part t.
  cut.finish_root = [&](int task, plan::PlanNode* top) { top->sink.key = part_key(task); };
  ARROW_ASSIGN_OR_RAISE(auto cut_stages, dist::StageCut::Make(*job_plan, std::move(cut)));
  std::vector<dist::ScheduledStage> stages = cut_stages->Scheduled();

  if (in_process &&
      (job.limits.task_timeout_seconds.has_value() || job.limits.task_memory_mb.has_value())) {
    std::fprintf(stderr,
                 "sluice: --workers 0 runs every task in this process: dataflow.limits "
                 "(task_timeout_seconds, task_memory_mb) are not enforced\n");
  }

  Progress::Options progress_options;
  progress_options.total = n_objects;
  progress_options.unit = "objects";
  progress_options.secondary_unit = "rows";
  Progress progress("run " + options.run_id, progress_options);
  dist::SchedulerOptions scheduling;
  scheduling.on_report = [&](const exec::TaskReport& r) {
    progress.Advance(r.objects, r.rows_out);
  };
  std::vector<dist::StageResult> done;
  arrow::Status st;
  if (in_process) {
    // No pool: the tasks run here, through the runner a worker uses.
    dist::StageScheduler scheduler(dist::TaskRunner(RunStageInProcess), std::move(scheduling));
    st = scheduler.Run(stages, &done);
  } else if (on_ray) {
    dist::StageScheduler scheduler(dist::RayExecutor::Runner(ray), std::move(scheduling));
    st = scheduler.Run(stages, &done);
  } else {
    // One pool of long-lived workers for both stages; they end with the scheduler.
    dist::PoolOptions pool{workers, 3, options.worker_binary, nullptr};
    pool.task_timeout_seconds =
        job.limits.task_timeout_seconds.value_or(dist::kDefaultTaskTimeoutSeconds);
    pool.task_memory_bytes = job.limits.task_memory_mb.value_or(0) << 20;
    pool.hidden_paths = HiddenPaths(config);
    // A pipeline's tasks free and re-fault a lot of memory each (dist/worker_memory.h).
    pool.memory_pool = "jemalloc";
    dist::StageScheduler scheduler(std::move(pool), std::move(scheduling));
    st = scheduler.Run(stages, &done);
  }
  progress.Finish();

  // What ran counts, even when a later stage failed.
  json timings = json::object();
  std::vector<exec::TaskReport> reports;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (!done[i].finished()) continue;
    timings["s" + std::to_string(stages[i].id)] = done[i].seconds;
    reports.insert(reports.end(), done[i].reports.begin(), done[i].reports.end());
  }

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

  // Every part of one output has one schema. A stage that writes `any` fixes its schema in each
  // task by the first stream emitted there, so tasks can disagree; such parts are never committed.
  for (size_t i = 1; st.ok() && i < result.files.size(); ++i) {
    const auto& first = result.files.front();
    const auto& other = result.files[i];
    if (!first.schema.empty() && !other.schema.empty() && other.schema != first.schema) {
      st = arrow::Status::TypeError("the tasks of run '", options.run_id,
                                    "' wrote parts with different schemas: '", first.key, "' has ",
                                    first.schema, ", but '", other.key, "' has ", other.schema,
                                    "; a stage that writes `any` must emit one schema");
    }
  }
  // Commit: the manifest object is written last; only then does the output exist.
  if (st.ok()) {
    auto ours = still_ours();
    if (!ours.ok()) {
      st = ours.status();
    } else if (!*ours) {
      st = arrow::Status::Invalid("run id '", options.run_id,
                                  "' was taken over by another submit while this one ran (its "
                                  "lease had lapsed); this attempt does not commit");
    }
  }
  if (st.ok()) {
    json files = json::array();
    for (const auto& f : result.files) {
      files.push_back({{"key", f.key}, {"rows", f.rows}, {"bytes", f.bytes}, {"blake3", f.blake3}});
    }
    json manifest = {{"format", storage::kSinkManifestFormat},
                     {"run_id", options.run_id},
                     {"attempt_id", attempt_id},
                     {"job_manifest_blake3", manifest_digest},
                     {"pins", PinsJson(plan)},
                     {"file_format", job.sink.kind},
                     {"rows", result.rows_out},
                     {"files", files},
                     {"committed_at", catalog::NowUtc()}};
    st = store->Put(manifest_key, arrow::Buffer::FromString(manifest.dump(2) + "\n"));
  }
  RemovePrefix(store.get(), shuffle_root + "/");
  // A worker killed while writing a part leaves a temp file even when its retry succeeded.
  (void)store->RemoveTemps(result.sink_path + "/", "-" + attempt_id + ".");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.rows_in = result.records_in;
  run.rows_out = result.rows_out;
  run.duplicates_dropped = result.duplicates_dropped;
  run.stage_timings = timings.dump();
  run.finished_at = catalog::NowUtc();
  if (!st.ok()) {
    // Nothing half-written may look like output: remove the parts this attempt wrote, and
    // only those. The marker goes last, and only when every part is gone; otherwise it stays
    // and the path reads as "not committed".
    const bool parts_removed = RemoveAttemptParts(store.get(), result.sink_path, attempt_id).ok();
    auto ours = still_ours();
    if (parts_removed && ours.ok() && *ours) {
      (void)store->Delete(storage::SinkMarkerKey(result.sink_path));
    }
    run.status = "failed";
    run.error = st.ToString();
    (void)registry->UpdateClaimedRun(run);
    return st;
  }
  run.status = "committed";
  ARROW_ASSIGN_OR_RAISE(bool recorded, registry->UpdateClaimedRun(run));
  if (!recorded) {
    return arrow::Status::Invalid("run id '", options.run_id,
                                  "' committed its output, but another submit took the run over "
                                  "in the registry meanwhile (this driver's lease had lapsed)");
  }
  return result;
}

}  // namespace sluice::pipeline
