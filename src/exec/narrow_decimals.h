// Parquet decimals of up to 18 digits read as decimal64 where only our decimal kernels see them.
// Arrow's reader widens such a column (an INT64 or INT32 in the file) to decimal128, and every
// operator after it then moves 16 bytes a value: in TPC-H Q1 the widening, the products and the
// sums of 16-byte values were about a quarter of the query. The plan keeps decimal128 (plan
// bytes and results do not change); the executor reads a column as decimal64 only where each use
// of it above the scan is one of plan/decimal_kernels.h's functions (arithmetic, comparisons, a
// cast to a decimal128, a sum), which take decimal64 and give decimal128, a count, or a filter,
// project or join passing it on to one. Any other use (a join or group key, min, a sort, an
// exchange, the result) keeps the plan's type.
#pragma once

#include <arrow/dataset/file_parquet.h>
#include <arrow/result.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "plan/plan_node.h"

namespace sluice::exec {

/// Per Parquet scan in `plan`, the file columns (PlanNode::columns) it may read as decimal64:
/// decimal128 columns of at most 18 digits whose every use is one of the above.
using NarrowDecimals = std::map<const plan::PlanNode*, std::set<std::string>>;
NarrowDecimals FindNarrowDecimals(const plan::PlanNode& plan);

/// A Parquet format that reads `columns` (file column names) as decimal64 from files that store
/// them as INT32 or INT64 (the scan's dataset schema must say decimal64 for them; a file that
/// stores one otherwise is read as Arrow reads it, and the scan casts). Other columns, and the
/// row groups, batches and readahead of a scan, are as Arrow's ParquetFileFormat gives them.
std::shared_ptr<arrow::dataset::ParquetFileFormat> NarrowDecimalParquetFormat(
    std::set<std::string> columns);

/// The NarrowDecimals that the executor's scans on this thread consult while it builds one plan's
/// operators; the previous ones again when it goes. (Scans are built deep in the executor's
/// recursion, which does not carry the whole plan.)
class ScopedNarrowDecimals {
 public:
  explicit ScopedNarrowDecimals(const NarrowDecimals* narrow);
  ~ScopedNarrowDecimals();
  ScopedNarrowDecimals(const ScopedNarrowDecimals&) = delete;
  ScopedNarrowDecimals& operator=(const ScopedNarrowDecimals&) = delete;

  /// The columns `scan` may read as decimal64 under the innermost scope; none outside one.
  static std::set<std::string> For(const plan::PlanNode& scan);

 private:
  const NarrowDecimals* previous_;
};

}  // namespace sluice::exec
