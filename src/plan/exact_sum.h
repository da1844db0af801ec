// SQL's sum of integers and decimals: exact, or an error. Arrow's sum and hash_sum of int64 wrap
// past 2^63 without a word (9223372036854775807 + 1 summed to -9223372036854775808), and its
// decimal sums pass 38 digits the same way. These keep a 128-bit total per group, which no run of
// 64-bit values can overflow, and fail when the total does not fit the result type.
#pragma once

#include <arrow/compute/api_aggregate.h>
#include <arrow/compute/registry.h>
#include <arrow/status.h>
#include <arrow/type_fwd.h>

#include <cstdint>
#include <string>

namespace sluice::plan {

/// sum with Arrow's result types: int8 to int64 -> int64, uint8 to uint64 -> uint64,
/// decimal128(p, s) and decimal64(p, s) -> decimal128(38, s). ScalarAggregateOptions (skip_nulls,
/// min_count) as Arrow's. Also registered as "hash_" + this name for GROUP BY.
inline constexpr const char* kExactSumFunction = "sluice_sum";

/// kExactSumFunction's options: Arrow's, and how an overflow error names the sum, as the query
/// wrote it ("sum(l_quantity)").
class ExactSumOptions : public arrow::compute::ScalarAggregateOptions {
 public:
  ExactSumOptions(bool skip_nulls, uint32_t min_count, std::string label)
      : ScalarAggregateOptions(skip_nulls, min_count), label(std::move(label)) {}

  std::string label;
};

/// Whether kExactSumFunction sums values of `type`: an integer or a decimal128 or decimal64.
bool SumsExactly(const arrow::DataType& type);

/// The error for a total past `type`: "overflow in sum(x): the total does not fit in int64",
/// with the way to a wider total where there is one.
arrow::Status SumOverflow(const std::string& label, const arrow::DataType& type);

/// Adds kExactSumFunction and its hash_ form to `registry`.
arrow::Status RegisterExactSum(arrow::compute::FunctionRegistry* registry);

}  // namespace sluice::plan
