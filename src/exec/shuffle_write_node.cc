#include "exec/shuffle_write_node.h"

#include <arrow/api.h>
#include <arrow/util/byte_size.h>

#include "exec/object_chunks.h"
#include "exec/row_partition.h"
#include "exec/shuffle.h"
#include "plan/compute_init.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;

// About how many bytes of rows are split and written at once: few batches per file for the
// reader, and a copy small enough to reuse memory the task already has.
constexpr int64_t kShuffleGroupBytes = 4 << 20;

class ShuffleWriteNode : public ChunkNode {
 public:
  ShuffleWriteNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                   const ShuffleWriteNodeOptions& options)
      : ChunkNode(plan, std::move(inputs), /*output_schema=*/nullptr),
        exchange_(options.exchange),
        task_(options.task) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) {
      return arrow::Status::Invalid("internal: plan: shuffle_write takes one input");
    }
    const auto& exchange = static_cast<const ShuffleWriteNodeOptions&>(options);
    return plan->EmplaceNode<ShuffleWriteNode>(plan, std::move(inputs), exchange);
  }

  const char* kind_name() const override { return "ShuffleWriteNode"; }

 protected:
  arrow::Status Finish(std::vector<ObjectChunk> chunks,
                       std::shared_ptr<arrow::Schema> schema) override {
    ARROW_ASSIGN_OR_RAISE(auto table, Sequence(chunks, schema));
    chunks.clear();
    ARROW_RETURN_NOT_OK(WriteExchange(table, exchange_, *task_));
    task_->report->rows_out = table->num_rows();
    return arrow::Status::OK();
  }

 private:
  const plan::ShuffleWrite exchange_;
  const std::shared_ptr<JobTask> task_;
};

}  // namespace

arrow::Status WriteExchange(const std::shared_ptr<arrow::Table>& table,
                            const plan::ShuffleWrite& exchange, const JobTask& task) {
  ARROW_RETURN_NOT_OK(plan::EnsureComputeInitialized());
  task.MaybeFail();
  // Under the task's attempt: a retried task never writes the name its lost attempt used, and
  // the next stage reads only the files the successful attempt reported.
  const plan::Fragment& f = *task.fragment;
  task.Say("writing shuffle files under '" +
           plan::ShuffleAttemptFolder(exchange.folder, f.task_name(), f.attempt) + "'");
  const auto partitions = static_cast<size_t>(exchange.partitions);
  std::vector<std::string> keys;
  std::vector<std::unique_ptr<ShuffleFileWriter>> files;
  auto failed = [&](size_t p, const arrow::Status& st) {
    return arrow::Status::IOError("writing shuffle file '", keys[p], "': ", st.message());
  };
  for (size_t p = 0; p < partitions; ++p) {
    keys.push_back(
        plan::ShuffleFileKey(exchange.folder, f.task_name(), f.attempt, static_cast<int32_t>(p)));
    auto file = ShuffleFileWriter::Open(task.store.get(), keys[p], table->schema());
    if (!file.ok()) return failed(p, file.status());
    files.push_back(*std::move(file));
  }
  // The rows go out a group of batches at a time, each group split by key and appended to the
  // files: what is copied at once is one group, not the task's whole output.
  std::vector<std::shared_ptr<arrow::RecordBatch>> group;
  int64_t group_bytes = 0;
  auto flush = [&]() -> arrow::Status {
    if (group.empty()) return arrow::Status::OK();
    std::shared_ptr<arrow::RecordBatch> rows = group[0];
    if (group.size() > 1) {
      ARROW_ASSIGN_OR_RAISE(auto t, arrow::Table::FromRecordBatches(table->schema(), group));
      ARROW_ASSIGN_OR_RAISE(rows, t->CombineChunksToBatch());
    }
    group.clear();
    group_bytes = 0;
    ARROW_ASSIGN_OR_RAISE(auto assignment,
                          PartitionRowsByKeys(*rows, exchange.keys, exchange.partitions));
    ARROW_ASSIGN_OR_RAISE(auto parts, SplitBatch(rows, assignment, exchange.partitions));
    for (size_t p = 0; p < partitions; ++p) {
      if (parts[p]->num_rows() == 0) continue;
      arrow::Status st = files[p]->Write(*parts[p]);
      if (!st.ok()) return failed(p, st);
    }
    return arrow::Status::OK();
  };
  arrow::TableBatchReader batches(*table);
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    ARROW_RETURN_NOT_OK(batches.ReadNext(&batch));
    if (batch == nullptr) break;
    group_bytes += arrow::util::TotalBufferSize(*batch);
    group.push_back(std::move(batch));
    if (group_bytes >= kShuffleGroupBytes) ARROW_RETURN_NOT_OK(flush());
  }
  ARROW_RETURN_NOT_OK(flush());
  for (size_t p = 0; p < partitions; ++p) {
    auto file = files[p]->Finish();
    if (!file.ok()) return failed(p, file.status());
    task.report->shuffle_files.push_back(*std::move(file));
  }
  task.MaybeFail("kill-after-write");
  if (task.AtFailpoint("corrupt-after-write")) {
    // One flipped byte in the first non-empty file, after its digest went into the report.
    for (const auto& file : task.report->shuffle_files) {
      if (file.bytes == 0) continue;
      ARROW_ASSIGN_OR_RAISE(auto bytes, task.store->Get(file.key));
      std::string damaged = bytes->ToString();
      damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x5a);
      ARROW_RETURN_NOT_OK(task.store->Put(file.key, arrow::Buffer::FromString(damaged)));
      break;
    }
  }
  return arrow::Status::OK();
}

arrow::Status RegisterShuffleWriteNode(ac::ExecFactoryRegistry* registry) {
  return registry->AddFactory(kShuffleWriteNode, ShuffleWriteNode::Make);
}

}  // namespace sluice::exec
