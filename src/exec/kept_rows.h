// Rows that a filter marks instead of dropping. Under a grouped aggregate, copying every column
// of a batch without the few rows a filter drops costs more than carrying those rows: TPC-H Q1's
// WHERE keeps 98.6 % of lineitem, and compacting its batches took about 10 % of the query. Such
// a filter (exec/filter_node.h) passes a batch that keeps most rows whole, with one more boolean
// column, kKeptRowsColumn, true at the rows that pass; a batch it compacted carries a scalar
// true there. The projects above it pass the column on, and the integer-key aggregate groups only
// the marked rows. Nothing else may see such a batch: the executor marks only for that shape.
#pragma once

#include <arrow/compute/exec.h>
#include <arrow/type_fwd.h>

#include <cstdint>

namespace sluice::exec {

inline constexpr char kKeptRowsColumn[] = "__kept_rows";

/// The index of kKeptRowsColumn in `schema`, or -1.
int KeptRowsIndex(const arrow::Schema& schema);

/// The rows of `batch` that its kept-rows column (at `index`) marks: all for a scalar true.
int64_t CountKeptRows(const arrow::compute::ExecBatch& batch, int index);

/// The kept-rows column's bits (no NULLs) where it marks some rows only; null for a scalar, which
/// keeps every row.
const arrow::ArrayData* KeptRowsMask(const arrow::compute::ExecBatch& batch, int index);

}  // namespace sluice::exec
