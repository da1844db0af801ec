#include "exec/fragment_runner.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <parquet/arrow/reader.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <map>

#include "artifact/verified_loader.h"
#include "exec/batch_transform.h"
#include "exec/dedup.h"
#include "exec/shuffle.h"
#include "exec/sink_writer.h"
#include "plan/session_spec.h"
#include "storage/ipc_stream.h"
#include "storage/jsonl_parser.h"

namespace sluice::exec {

namespace {

// Rows of one source object, before they get their sequence numbers.
struct Chunk {
  int64_t object_index = -1;  // -1: the rows already carry __seq (they came from a shuffle)
  std::string key;            // the source object; empty for shuffle input
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  std::shared_ptr<arrow::Schema> schema;
};

// Test-only fault injection: SLUICE_FAILPOINT=kill:<task>:<attempt|*> makes the matching
// worker SIGKILL itself after its inputs are processed and before it writes any output, which is
// the worst moment for the driver's retry logic; kill-after-write:<task>:<attempt|*> after it
// wrote its shuffle files, leaving a lost attempt's files behind.
void MaybeFail(const plan::Fragment& f, const char* when = "kill") {
  const char* fp = std::getenv("SLUICE_FAILPOINT");
  if (fp == nullptr) return;
  const std::string task = std::string(when) + ":" + f.task_name() + ":";
  if (fp == task + std::to_string(f.attempt) || fp == task + "*") raise(SIGKILL);
}

arrow::Result<std::shared_ptr<arrow::Schema>> SeqSchema(const std::shared_ptr<arrow::Schema>& s) {
  return s->AddField(s->num_fields(), arrow::field(plan::kSequenceColumn, arrow::int64(), false));
}

// Gives every chunk its rows' positions in the job order, and concatenates.
arrow::Result<std::shared_ptr<arrow::Table>> Sequence(
    const std::vector<Chunk>& chunks, const std::shared_ptr<arrow::Schema>& schema) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> out;
  ARROW_ASSIGN_OR_RAISE(auto with_seq, SeqSchema(schema));
  for (const Chunk& c : chunks) {
    if (c.object_index < 0) {
      out.insert(out.end(), c.batches.begin(), c.batches.end());
      continue;
    }
    int64_t row = 0;
    for (const auto& b : c.batches) {
      arrow::Int64Builder seq;
      ARROW_RETURN_NOT_OK(seq.Reserve(b->num_rows()));
      for (int64_t i = 0; i < b->num_rows(); ++i) seq.UnsafeAppend((c.object_index << 32) | row++);
      ARROW_ASSIGN_OR_RAISE(auto seq_array, seq.Finish());
      auto columns = b->columns();
      columns.push_back(seq_array);
      out.push_back(arrow::RecordBatch::Make(with_seq, b->num_rows(), columns));
    }
  }
  const bool has_seq = schema->GetFieldIndex(plan::kSequenceColumn) >= 0;
  return arrow::Table::FromRecordBatches(has_seq ? schema : with_seq, out);
}

class Runner {
 public:
  Runner(const plan::Fragment& f, const ProgressFn& progress) : f_(f), progress_(progress) {}

  arrow::Status Run() {
    ARROW_ASSIGN_OR_RAISE(store_, storage::ObjectStore::Open(f_.session.store_url));
    for (const plan::Operator& op : f_.operators) {
      ARROW_RETURN_NOT_OK(std::visit([this](const auto& o) { return Apply(o); }, op));
    }
    return arrow::Status::OK();
  }

  TaskReport report;

 private:
  arrow::Status Apply(const plan::ScanObjects& scan) {
    schema_ = scan.schema;
    if (scan.schema == nullptr) {
      return arrow::Status::Invalid("internal: plan: scan_objects without a schema");
    }
    for (size_t i = 0; i < scan.keys.size(); ++i) {
      const std::string& key = scan.keys[i];
      Say("reading object '" + key + "'");
      ARROW_ASSIGN_OR_RAISE(auto bytes, store_->Get(key));
      Chunk chunk;
      chunk.object_index = scan.first_object_index + static_cast<int64_t>(i);
      chunk.key = key;
      chunk.schema = scan.schema;
      if (scan.format == "jsonl") {
        ARROW_ASSIGN_OR_RAISE(auto parsed,
                              storage::ParseJsonl(*bytes, scan.schema, key, scan.skip_bad_records));
        report.records_in += parsed.records;
        report.bad_records += parsed.bad_records;
        chunk.batches.push_back(parsed.batch);
      } else if (scan.format == "ipc") {
        auto reader = arrow::ipc::RecordBatchFileReader::Open(
            std::make_shared<arrow::io::BufferReader>(bytes));
        if (!reader.ok()) {
          return arrow::Status::Invalid("object '", key,
                                        "': not an Arrow IPC file: ", reader.status().message());
        }
        ARROW_RETURN_NOT_OK(
            storage::CheckSchema(*scan.schema, *(*reader)->schema(), "object '" + key + "'"));
        for (int b = 0; b < (*reader)->num_record_batches(); ++b) {
          ARROW_ASSIGN_OR_RAISE(auto batch, (*reader)->ReadRecordBatch(b));
          arrow::Status st = batch->ValidateFull();
          if (!st.ok()) return arrow::Status::Invalid("object '", key, "': ", st.message());
          report.records_in += batch->num_rows();
          chunk.batches.push_back(batch);
        }
      } else {
        auto reader = parquet::arrow::OpenFile(std::make_shared<arrow::io::BufferReader>(bytes),
                                               arrow::default_memory_pool());
        if (!reader.ok()) {
          return arrow::Status::Invalid("object '", key,
                                        "': not a Parquet file: ", reader.status().message());
        }
        auto read = (*reader)->ReadTable();
        if (!read.ok())
          return arrow::Status::Invalid("object '", key, "': ", read.status().message());
        std::shared_ptr<arrow::Table> table = *read;
        ARROW_RETURN_NOT_OK(
            storage::CheckSchema(*scan.schema, *table->schema(), "object '" + key + "'"));
        ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
        arrow::Status st = batch->ValidateFull();
        if (!st.ok()) return arrow::Status::Invalid("object '", key, "': ", st.message());
        report.records_in += batch->num_rows();
        chunk.batches.push_back(batch->ReplaceSchema(scan.schema).ValueOr(batch));
      }
      report.objects++;
      chunks_.push_back(std::move(chunk));
    }
    return arrow::Status::OK();
  }

  arrow::Status Apply(const plan::ScanShuffle& scan) {
    schema_ = scan.schema;
    Chunk chunk;
    chunk.schema = scan.schema;
    for (size_t i = 0; i < scan.keys.size(); ++i) {
      const std::string& key = scan.keys[i];
      Say("reading shuffle file '" + key + "'");
      ARROW_ASSIGN_OR_RAISE(auto table,
                            ReadShuffleFile(store_.get(), key, scan.blake3[i], *scan.schema));
      ARROW_ASSIGN_OR_RAISE(auto batches, arrow::TableBatchReader(*table).ToRecordBatches());
      chunk.batches.insert(chunk.batches.end(), batches.begin(), batches.end());
    }
    chunks_.push_back(std::move(chunk));
    return arrow::Status::OK();
  }

  arrow::Status Apply(const plan::CallTransform& call) {
    const std::string stage = "stage '" + call.qualified_name + "'";
    Say("loading " + stage + " (pin " + call.pin + ")");
    ARROW_ASSIGN_OR_RAISE(auto pin, artifact::Digest::FromHex(call.pin, "pin_artifact_hash"));
    artifact::ArtifactCache cache(store_, f_.session.cache_dir);
    ARROW_ASSIGN_OR_RAISE(auto verified, cache.FetchVerified(pin));
    ARROW_ASSIGN_OR_RAISE(auto library, artifact::LoadVerified(verified, call.qualified_name));
    const std::shared_ptr<arrow::Schema>& declared_input = library->identity().input_arrow_schema;
    // The declared output schema; for an `any` output, the first stream emitted fixes it.
    std::shared_ptr<arrow::Schema> output_schema = call.output_schema;
    BatchTransform transform(library, call.output_schema);
    for (Chunk& chunk : chunks_) {
      const std::string object =
          chunk.key.empty() ? std::string("its shuffle input") : "object '" + chunk.key + "'";
      Say("running " + stage + " on " + object);
      if (chunk.schema == nullptr) {
        // The stage before writes `any` and emitted no stream at all for this object, so
        // there is no stream to pass on.
        continue;
      }
      if (declared_input != nullptr) {
        // The stage before may write `any`: what it wrote is checked against what this one
        // declares it reads, when the data flows.
        ARROW_RETURN_NOT_OK(
            storage::CheckSchema(*declared_input, *chunk.schema, stage + " input from " + object));
      }
      ARROW_ASSIGN_OR_RAISE(auto input, storage::WriteIpcStream(chunk.schema, chunk.batches));
      auto outputs = transform.Call(input);
      if (!outputs.ok()) {
        return arrow::Status::Invalid(stage, " on ", object, ": ", outputs.status().message());
      }
      chunk.batches.clear();
      for (size_t i = 0; i < outputs->size(); ++i) {
        const storage::IpcStream& stream = (*outputs)[i];
        if (output_schema == nullptr) {
          output_schema = stream.schema;
        } else if (call.output_schema == nullptr) {
          ARROW_RETURN_NOT_OK(storage::CheckSchema(
              *output_schema, *stream.schema,
              "transform '" + call.qualified_name + "' (output schema 'any') output stream " +
                  std::to_string(i + 1) + " on " + object +
                  " differs from the first stream it emitted"));
        }
        for (const auto& b : stream.batches) {
          chunk.batches.push_back(b->ReplaceSchema(output_schema).ValueOr(b));
        }
      }
      chunk.schema = output_schema;
    }
    // Objects before the first stream of an `any` output hold no rows; they get its schema.
    for (Chunk& chunk : chunks_) {
      if (chunk.schema == nullptr) chunk.schema = output_schema;
    }
    schema_ = output_schema;
    return arrow::Status::OK();
  }

  arrow::Status Apply(const plan::HashExchange& exchange) {
    ARROW_ASSIGN_OR_RAISE(auto table, Sequence(chunks_, schema_));
    ARROW_ASSIGN_OR_RAISE(auto parts, HashPartition(table, exchange.key, exchange.partitions));
    MaybeFail(f_);
    // Under the task's attempt: a retried task never writes the name its lost attempt used, and
    // the next stage reads only the files the successful attempt reported.
    const std::string folder =
        plan::ShuffleAttemptFolder(exchange.folder, f_.task_name(), f_.attempt);
    Say("writing shuffle files under '" + folder + "'");
    for (int32_t p = 0; p < exchange.partitions; ++p) {
      const std::string key = folder + "/part-" + std::to_string(p) + ".arrow";
      ARROW_ASSIGN_OR_RAISE(auto file,
                            WriteShuffleFile(store_.get(), key, parts[static_cast<size_t>(p)]));
      report.shuffle_files.push_back(std::move(file));
    }
    MaybeFail(f_, "kill-after-write");
    report.rows_out = table->num_rows();
    return arrow::Status::OK();
  }

  arrow::Status Apply(const plan::DedupFirst& dedup) {
    Say("deduplicating on '" + dedup.key + "'");
    ARROW_ASSIGN_OR_RAISE(auto table, Sequence(chunks_, schema_));
    ARROW_ASSIGN_OR_RAISE(deduped_, DedupFirst(table, dedup.key, &report.duplicates_dropped));
    return arrow::Status::OK();
  }

  arrow::Status Apply(const plan::RunSqlStage&) {
    // `sluice worker` hands a SQL stage to the SQL layer before it gets here.
    return arrow::Status::Invalid("internal: plan: run_sql_stage reached the job fragment runner");
  }

  arrow::Status Apply(const plan::WriteSink& sink) {
    std::shared_ptr<arrow::Table> table = deduped_;
    if (table == nullptr && schema_ == nullptr) {
      // The last stage writes `any` and emitted no stream in this task: no rows and no schema,
      // so no part.
      return arrow::Status::OK();
    }
    if (table == nullptr) {
      ARROW_ASSIGN_OR_RAISE(table, Sequence(chunks_, schema_));
    }
    MaybeFail(f_);
    Say("writing sink part '" + sink.key + "'");
    ARROW_ASSIGN_OR_RAISE(auto file, WriteSinkPart(store_.get(), sink.key, sink.format, table));
    report.rows_out = file.rows;
    report.files.push_back(std::move(file));
    return arrow::Status::OK();
  }

  void Say(const std::string& doing) const {
    if (progress_) progress_(doing);
  }

  const plan::Fragment& f_;
  const ProgressFn& progress_;
  std::shared_ptr<storage::ObjectStore> store_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<Chunk> chunks_;
  std::shared_ptr<arrow::Table> deduped_;
};

}  // namespace

TaskReport RunFragment(const plan::Fragment& fragment, const ProgressFn& progress) {
  const auto start = std::chrono::steady_clock::now();
  Runner runner(fragment, progress);
  runner.report.task = fragment.task_name();
  runner.report.attempt = fragment.attempt;
  // Nothing runs on a worker that cannot give the driver's answer.
  arrow::Status st = plan::CheckParity(fragment.session.parity);
  if (st.ok()) st = runner.Run();
  TaskReport report = std::move(runner.report);
  if (!st.ok()) {
    report.status = "error";
    report.error = "task " + fragment.task_name() + ": " + st.ToString();
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace sluice::exec
