#include "exec/dedup.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <string>
#include <unordered_set>

#include "plan/compute_init.h"
#include "exec/key_bytes.h"
#include "plan/fragment.h"

namespace sluice::exec {

arrow::Result<std::shared_ptr<arrow::Table>> DedupFirst(const std::shared_ptr<arrow::Table>& table,
                                                        const std::string& key, int64_t* dropped) {
  ARROW_RETURN_NOT_OK(plan::EnsureComputeInitialized());
  if (table->GetColumnByName(key) == nullptr) {
    return arrow::Status::Invalid("dedup key '", key, "' is not a column of ",
                                  table->schema()->ToString());
  }
  if (table->GetColumnByName(plan::kSequenceColumn) == nullptr) {
    return arrow::Status::Invalid("internal: dedup input has no ", plan::kSequenceColumn,
                                  " column");
  }
  ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
  arrow::compute::SortOptions order({arrow::compute::SortKey(plan::kSequenceColumn)});
  ARROW_ASSIGN_OR_RAISE(auto sorted_idx, arrow::compute::SortIndices(batch, order));
  ARROW_ASSIGN_OR_RAISE(auto sorted, arrow::compute::Take(batch, sorted_idx));
  auto rows = sorted.record_batch();
  std::unordered_set<std::string> seen;
  seen.reserve(static_cast<size_t>(rows->num_rows()));
  arrow::Int64Builder keep;
  ARROW_RETURN_NOT_OK(
      ForEachKey(*rows->GetColumnByName(key), [&](int64_t i, const uint8_t* data, size_t size) {
        if (data == nullptr || seen.emplace(reinterpret_cast<const char*>(data), size).second) {
          (void)keep.Append(i);
        }
      }));
  ARROW_ASSIGN_OR_RAISE(auto keep_idx, keep.Finish());
  *dropped += rows->num_rows() - keep_idx->length();
  ARROW_ASSIGN_OR_RAISE(auto kept, arrow::compute::Take(rows, keep_idx));
  return arrow::Table::FromRecordBatches({kept.record_batch()});
}

}  // namespace sluice::exec
