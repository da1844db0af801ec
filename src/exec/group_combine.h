// One group's finished aggregate values from two tables, combined. Two threads that grouped
// mostly different keys (TPC-H Q18's order keys, which lineitem holds in runs) can each finish
// their own table at once and combine only the few groups both hold, instead of merging one
// table into the other key by key on one thread. That holds for the aggregates whose finished
// values combine exactly as their states merge: sums, counts, and min and max of values that
// compare without NaN.
#pragma once

#include <arrow/compute/api.h>
#include <arrow/datum.h>
#include <arrow/result.h>

#include <memory>
#include <string>

namespace sluice::exec {

/// Whether the finished values of Acero hash aggregate `function` (with `options`, giving
/// `output_type`) combine as CombineFinished does: hash_sum and our decimal sum (NULL for no
/// non-NULL values: skip_nulls, min_count at most 1) of integers and doubles, and our sum of
/// decimal128;
/// hash_count and hash_count_all; hash_min and hash_max (the same options) of integers, dates,
/// timestamps, decimal128 and strings (not floating point, whose NaN orders apart).
bool CombinableAggregate(const std::string& function,
                         const arrow::compute::FunctionOptions* options,
                         const arrow::DataType& output_type);

/// Row i of `a` combined with row i of `b` (the same group's finished values from two tables)
/// for a CombinableAggregate `function` with `options`: their sum (a NULL one counting for
/// nothing), or the smaller or larger. A sum that does not fit its type is an error, naming the
/// sum as plan::ExactSumOptions does.
arrow::Result<arrow::Datum> CombineFinished(const std::string& function,
                                            const arrow::compute::FunctionOptions* options,
                                            const arrow::Datum& a, const arrow::Datum& b,
                                            arrow::compute::ExecContext* ctx);

}  // namespace sluice::exec
