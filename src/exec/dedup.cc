#include "exec/dedup.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <string>
#include <string_view>
#include <unordered_set>

#include "exec/key_bytes.h"
#include "plan/compute_init.h"
#include "plan/fragment.h"

namespace sluice::exec {

namespace {

// Whether a __seq column (int64) never decreases, across its chunks.
arrow::Result<bool> NonDecreasing(const arrow::ChunkedArray& seq) {
  if (seq.type()->id() != arrow::Type::INT64) {
    return arrow::Status::Invalid("internal: ", plan::kSequenceColumn, " is ",
                                  seq.type()->ToString(), ", not int64");
  }
  bool any = false;
  int64_t last = 0;
  for (const auto& chunk : seq.chunks()) {
    const auto& values = static_cast<const arrow::Int64Array&>(*chunk);
    if (values.null_count() > 0) return false;
    for (int64_t i = 0; i < values.length(); ++i) {
      const int64_t v = values.Value(i);
      if (any && v < last) return false;
      last = v;
      any = true;
    }
  }
  return true;
}

}  // namespace

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
  if (table->num_rows() == 0) return table;
  // Keys are looked up as views of the key column's bytes: no copy per row.
  std::unordered_set<std::string_view> seen;
  seen.reserve(static_cast<size_t>(table->num_rows()));
  auto first_time = [&](const uint8_t* data, size_t size) {
    return data == nullptr || seen.emplace(reinterpret_cast<const char*>(data), size).second;
  };
  ARROW_ASSIGN_OR_RAISE(const bool in_order,
                        NonDecreasing(*table->GetColumnByName(plan::kSequenceColumn)));
  arrow::Datum kept;
  if (in_order) {
    // The usual case (the shuffle reader reads map outputs in order): each key's first row is
    // found in place, and the rows kept are filtered chunk by chunk, with no sort and no copy
    // of the whole table into one array first.
    arrow::BooleanBuilder keep;
    ARROW_RETURN_NOT_OK(keep.Reserve(table->num_rows()));
    int64_t kept_rows = 0;
    for (const auto& chunk : table->GetColumnByName(key)->chunks()) {
      ARROW_RETURN_NOT_OK(ForEachKey(*chunk, [&](int64_t, const uint8_t* data, size_t size) {
        const bool first = first_time(data, size);
        kept_rows += first;
        keep.UnsafeAppend(first);
      }));
    }
    ARROW_ASSIGN_OR_RAISE(auto mask, keep.Finish());
    *dropped += table->num_rows() - kept_rows;
    ARROW_ASSIGN_OR_RAISE(kept, arrow::compute::Filter(arrow::Datum(table), mask));
  } else {
    // The table is used as it came, in chunks: the sort and the takes read across them. Only
    // the key column is put in __seq order to find each key's first row; the rows kept are then
    // taken at once, already in that order, instead of sorting every column and taking again.
    arrow::compute::SortOptions order({arrow::compute::SortKey(plan::kSequenceColumn)});
    ARROW_ASSIGN_OR_RAISE(auto sorted_idx, arrow::compute::SortIndices(arrow::Datum(table), order));
    ARROW_ASSIGN_OR_RAISE(arrow::Datum sorted_keys,
                          arrow::compute::Take(table->GetColumnByName(key), sorted_idx));
    const auto& row_of = static_cast<const arrow::UInt64Array&>(*sorted_idx);
    arrow::Int64Builder keep;
    ARROW_RETURN_NOT_OK(keep.Reserve(table->num_rows()));
    int64_t first = 0;  // the sorted position of the chunk's first row
    for (const auto& chunk : sorted_keys.chunked_array()->chunks()) {
      ARROW_RETURN_NOT_OK(ForEachKey(*chunk, [&](int64_t i, const uint8_t* data, size_t size) {
        if (first_time(data, size)) {
          keep.UnsafeAppend(static_cast<int64_t>(row_of.Value(first + i)));
        }
      }));
      first += chunk->length();
    }
    ARROW_ASSIGN_OR_RAISE(auto keep_idx, keep.Finish());
    *dropped += table->num_rows() - keep_idx->length();
    ARROW_ASSIGN_OR_RAISE(kept, arrow::compute::Take(arrow::Datum(table), keep_idx));
  }
  // Left in the input's chunks: the sink writes them as they are, and one batch would be a
  // copy of every kept row into fresh memory.
  return kept.table();
}

}  // namespace sluice::exec
