#include "exec/dedup.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <string>
#include <unordered_set>

#include "exec/key_bytes.h"
#include "plan/compute_init.h"
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
  if (table->num_rows() == 0) {
    ARROW_ASSIGN_OR_RAISE(auto empty, table->CombineChunksToBatch());
    return arrow::Table::FromRecordBatches({empty});
  }
  // The table is used as it came, in chunks: the sort and the takes read across them, so the
  // rows are copied once, into the output, not first into one batch.
  arrow::compute::SortOptions order({arrow::compute::SortKey(plan::kSequenceColumn)});
  ARROW_ASSIGN_OR_RAISE(auto sorted_idx, arrow::compute::SortIndices(arrow::Datum(table), order));
  // Only the key column is put in __seq order to find each key's first row; the rows kept are
  // then taken at once, already in that order, instead of sorting every column and taking again.
  ARROW_ASSIGN_OR_RAISE(arrow::Datum sorted_keys,
                        arrow::compute::Take(table->GetColumnByName(key), sorted_idx));
  const auto& row_of = static_cast<const arrow::UInt64Array&>(*sorted_idx);
  std::unordered_set<std::string> seen;
  seen.reserve(static_cast<size_t>(table->num_rows()));
  arrow::Int64Builder keep;
  ARROW_RETURN_NOT_OK(keep.Reserve(table->num_rows()));
  int64_t first = 0;  // the sorted position of the chunk's first row
  for (const auto& chunk : sorted_keys.chunked_array()->chunks()) {
    ARROW_RETURN_NOT_OK(ForEachKey(*chunk, [&](int64_t i, const uint8_t* data, size_t size) {
      if (data == nullptr || seen.emplace(reinterpret_cast<const char*>(data), size).second) {
        keep.UnsafeAppend(static_cast<int64_t>(row_of.Value(first + i)));
      }
    }));
    first += chunk->length();
  }
  ARROW_ASSIGN_OR_RAISE(auto keep_idx, keep.Finish());
  *dropped += table->num_rows() - keep_idx->length();
  ARROW_ASSIGN_OR_RAISE(arrow::Datum kept, arrow::compute::Take(arrow::Datum(table), keep_idx));
  // One batch, as the dedup node sends it on.
  ARROW_ASSIGN_OR_RAISE(auto batch, kept.table()->CombineChunksToBatch());
  return arrow::Table::FromRecordBatches({batch});
}

}  // namespace sluice::exec
