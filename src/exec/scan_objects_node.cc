#include "exec/scan_objects_node.h"

#include <arrow/acero/query_context.h>
#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <parquet/arrow/reader.h>

#include "exec/object_chunks.h"
#include "storage/ipc_stream.h"
#include "storage/jsonl_parser.h"
#include "storage/validate.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

class ScanObjectsNode : public ac::ExecNode {
 public:
  ScanObjectsNode(ac::ExecPlan* plan, const ScanObjectsNodeOptions& options)
      : ac::ExecNode(plan, {}, {}, options.scan.schema), scan_(options.scan), task_(options.task) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (!inputs.empty()) {
      return arrow::Status::Invalid("internal: plan: scan_objects takes no input");
    }
    const auto& scan = static_cast<const ScanObjectsNodeOptions&>(options);
    if (scan.scan.schema == nullptr) {
      return arrow::Status::Invalid("internal: plan: scan_objects without a schema");
    }
    return plan->EmplaceNode<ScanObjectsNode>(plan, scan);
  }

  const char* kind_name() const override { return "ScanObjectsNode"; }

  arrow::Status InputReceived(ac::ExecNode*, arrow::ExecBatch) override {
    return arrow::Status::Invalid("internal: scan_objects has no input");
  }
  arrow::Status InputFinished(ac::ExecNode*, int) override {
    return arrow::Status::Invalid("internal: scan_objects has no input");
  }

  arrow::Status StartProducing() override {
    plan_->query_context()->ScheduleTask([this] { return Produce(); }, "sluice_scan_objects");
    return arrow::Status::OK();
  }
  void PauseProducing(ac::ExecNode*, int32_t) override {}
  void ResumeProducing(ac::ExecNode*, int32_t) override {}

 protected:
  arrow::Status StopProducingImpl() override { return arrow::Status::OK(); }

 private:
  // Reads every object in order and sends each on as it is read.
  arrow::Status Produce() {
    int sent = 0;
    for (size_t i = 0; i < scan_.keys.size(); ++i) {
      if (stopped_) return arrow::Status::OK();
      ObjectChunk chunk;
      chunk.object_index = scan_.first_object_index + static_cast<int64_t>(i);
      chunk.key = scan_.keys[i];
      chunk.schema = scan_.schema;
      ARROW_RETURN_NOT_OK(Read(&chunk));
      task_->report->objects++;
      ARROW_RETURN_NOT_OK(SendChunk(this, output_, chunk, &sent));
    }
    return FinishSending(this, output_, scan_.schema, sent);
  }

  arrow::Status Read(ObjectChunk* chunk) {
    const std::string& key = chunk->key;
    TaskReport& report = *task_->report;
    task_->Say("reading object '" + key + "'");
    ARROW_ASSIGN_OR_RAISE(auto bytes, task_->store->Get(key));
    if (scan_.format == "jsonl") {
      ARROW_ASSIGN_OR_RAISE(auto parsed,
                            storage::ParseJsonl(*bytes, scan_.schema, key, scan_.skip_bad_records));
      report.records_in += parsed.records;
      report.bad_records += parsed.bad_records;
      chunk->batches.push_back(parsed.batch);
    } else if (scan_.format == "ipc") {
      auto reader =
          arrow::ipc::RecordBatchFileReader::Open(std::make_shared<arrow::io::BufferReader>(bytes));
      if (!reader.ok()) {
        return arrow::Status::Invalid("object '", key,
                                      "': not an Arrow IPC file: ", reader.status().message());
      }
      ARROW_RETURN_NOT_OK(
          storage::CheckSchema(*scan_.schema, *(*reader)->schema(), "object '" + key + "'"));
      for (int b = 0; b < (*reader)->num_record_batches(); ++b) {
        ARROW_ASSIGN_OR_RAISE(auto batch, (*reader)->ReadRecordBatch(b));
        arrow::Status st = storage::ValidateFull(*batch);
        if (!st.ok()) return arrow::Status::Invalid("object '", key, "': ", st.message());
        report.records_in += batch->num_rows();
        chunk->batches.push_back(batch);
      }
    } else {
      // Pages that carry a CRC are checked against it.
      parquet::ReaderProperties properties(arrow::default_memory_pool());
      properties.set_page_checksum_verification(true);
      parquet::arrow::FileReaderBuilder builder;
      std::unique_ptr<parquet::arrow::FileReader> reader;
      arrow::Status opened =
          builder.Open(std::make_shared<arrow::io::BufferReader>(bytes), properties);
      if (opened.ok()) opened = builder.Build(&reader);
      if (!opened.ok()) {
        return arrow::Status::Invalid("object '", key, "': not a Parquet file: ", opened.message());
      }
      auto read = reader->ReadTable();
      if (!read.ok())
        return arrow::Status::Invalid("object '", key, "': ", read.status().message());
      std::shared_ptr<arrow::Table> table = *read;
      ARROW_RETURN_NOT_OK(
          storage::CheckSchema(*scan_.schema, *table->schema(), "object '" + key + "'"));
      ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
      arrow::Status st = storage::ValidateFull(*batch);
      if (!st.ok()) return arrow::Status::Invalid("object '", key, "': ", st.message());
      report.records_in += batch->num_rows();
      chunk->batches.push_back(batch->ReplaceSchema(scan_.schema).ValueOr(batch));
    }
    return arrow::Status::OK();
  }

  const plan::ScanObjects scan_;
  const std::shared_ptr<JobTask> task_;
};

}  // namespace

arrow::Status RegisterScanObjectsNode(ac::ExecFactoryRegistry* registry) {
  return registry->AddFactory(kScanObjectsNode, ScanObjectsNode::Make);
}

}  // namespace sluice::exec
