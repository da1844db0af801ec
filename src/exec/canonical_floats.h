// Floating-point keys as SQL compares them: -0.0 equals 0.0, and every NaN equals every other
// (DuckDB and PostgreSQL group and join them so). Acero's hash joins and aggregates hash and
// compare a key's bits, so 0.0 and -0.0 made two groups and did not join, and NaNs of two bit
// patterns (a negated NaN) neither. A node before them rewrites such keys to one value each:
// 0.0 and the canonical quiet NaN. (Exchanges already hash them so: exec/row_partition.h.)
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <memory>
#include <string>
#include <vector>

namespace sluice::exec {

/// Whether `type` is one whose values CanonicalFloats rewrites: float32 or float64.
bool IsFloatKey(const arrow::DataType& type);

/// `array` (of a type IsFloatKey) with 0.0 for -0.0 and the canonical quiet NaN for every NaN:
/// itself where it holds neither. For keys hashed outside a plan (a window's partitions).
arrow::Result<std::shared_ptr<arrow::Array>> CanonicalFloatArray(
    std::shared_ptr<arrow::Array> array, arrow::MemoryPool* pool);

/// `input` with its columns named `columns` (float32 or float64; others pass as they are) holding
/// 0.0 for -0.0 and the canonical quiet NaN for every NaN. A batch without either passes
/// untouched. `input` as it is where `columns` is empty.
/// With `as` (one name per column), the canonical values are appended as columns of those names
/// instead, and the columns keep their values: a join's output shows -0.0 where its key had it.
arrow::Result<arrow::acero::Declaration> CanonicalFloats(arrow::acero::Declaration input,
                                                         std::vector<std::string> columns,
                                                         std::vector<std::string> as = {});

}  // namespace sluice::exec
