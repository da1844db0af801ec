// Decimal128 arithmetic on native 128-bit integers. Arrow's own decimal kernels call an
// out-of-line operator per value (about a third of TPC-H Q1's time); these do the same
// arithmetic inline. Sums are plan/exact_sum.h.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/compute/registry.h>
#include <arrow/status.h>
#include <arrow/type_fwd.h>

namespace sluice::plan {

/// add, subtract and multiply of two decimal128 values with overflow checks, typed as Arrow's
/// add_checked, subtract_checked and multiply_checked type them: (p1 + p2 + 1, s1 + s2) for a
/// product; (max(p1 - s1, p2 - s2) + s + 1, s) for a sum or difference of one scale s.
inline constexpr const char* kDecimalAddFunction = "sluice_decimal_add";
inline constexpr const char* kDecimalSubtractFunction = "sluice_decimal_subtract";
inline constexpr const char* kDecimalMultiplyFunction = "sluice_decimal_multiply";
/// divide of two decimal128 values as Arrow's divide and divide_checked: the dividend scaled up
/// by d = max(4, s1 + p2 - s2 + 1) + s2 - s1 places (Arrow's implicit cast), then the quotient
/// truncated toward zero, typed (p1 + d, s1 + d - s2); a valid zero divisor is an error.
inline constexpr const char* kDecimalDivideFunction = "sluice_decimal_divide";

/// Comparisons of two decimal128 values of one scale, as Arrow's equal, not_equal, less,
/// less_equal, greater and greater_equal.
inline constexpr const char* kDecimalEqualFunction = "sluice_decimal_equal";
inline constexpr const char* kDecimalNotEqualFunction = "sluice_decimal_not_equal";
inline constexpr const char* kDecimalLessFunction = "sluice_decimal_less";
inline constexpr const char* kDecimalLessEqualFunction = "sluice_decimal_less_equal";
inline constexpr const char* kDecimalGreaterFunction = "sluice_decimal_greater";
inline constexpr const char* kDecimalGreaterEqualFunction = "sluice_decimal_greater_equal";

/// A cast of decimal128(p1, s1) to decimal128(p2, s2) with s2 >= s1, with CastOptions as Arrow's
/// cast. Of one scale the unscaled values do not change, so it only checks that each valid value
/// has at most p2 digits, and shares the input's buffers; to a larger scale it multiplies each by
/// 10^(s2 - s1), with the same check. An integer input is taken as of scale 0. (Arrow's cast of
/// an integer type refuses a target of fewer digits than the type may hold, whatever the
/// values; this checks each value, as SQL does.)
inline constexpr const char* kDecimalFitFunction = "sluice_decimal_fit";

/// The digits of the widest value of integer type `id`: the precision of the decimal128 that
/// Arrow's implicit cast gives it (int64 19, uint64 20).
int32_t IntegerDigits(arrow::Type::type id);

/// Adds the functions above to `registry`.
arrow::Status RegisterDecimalKernels(arrow::compute::FunctionRegistry* registry);

/// `expression` with each add, subtract, multiply and divide (checked or not) and each
/// comparison of two decimal128 operands of `schema`, or of a decimal128 and an integer (taken
/// as Arrow's implicit cast takes it), replaced by the functions above, where they give the same
/// type (an operand of a smaller scale is widened first, as Arrow does), and each checked cast
/// of a decimal128 or an integer to a decimal128 of the same or a larger scale by
/// kDecimalFitFunction. Parts that do not bind against `schema` are left as they are. For the
/// executor: plans keep Arrow's names, so plan bytes do not change.
arrow::compute::Expression WithDecimalKernels(const arrow::compute::Expression& expression,
                                              const arrow::Schema& schema);

}  // namespace sluice::plan
