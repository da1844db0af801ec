// IN over a set of integers that lie close together, answered from a bitmap over the set's range.
// Arrow's is_in hashes each row into a memo table; the semi join reduction's key sets (TPC-H
// Q20: l_partkey in some 2,000 part keys, for each of 6M lineitem rows) made that a tenth of the
// query. A bit per value of the range costs one load per row instead.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/compute/registry.h>
#include <arrow/status.h>
#include <arrow/type_fwd.h>

namespace sluice::plan {

/// is_in of an integer or date32 column with SetLookupOptions whose value set is of the column's
/// type, holds no NULL and spans a dense range (IntSetIsDense). kIntInFunction answers false
/// for a NULL row (Arrow's MATCH and SKIP, the set holding no NULL); kIntInOrNullFunction
/// answers NULL (EMIT_NULL and INCONCLUSIVE). Other sets are an error: the rewrite below never
/// makes such a call.
inline constexpr const char* kIntInFunction = "sluice_int_is_in";
inline constexpr const char* kIntInOrNullFunction = "sluice_int_is_in_or_null";

/// Whether `value_set` (of `type`) is one kIntInFunction takes: an integer or date32 type, no NULL,
/// at least one value, and a range of at most 2^23 values that is at most 1,024 per value of the
/// set (or at most 2^16), so that its bitmap stays small beside the set.
bool IntSetIsDense(const arrow::Datum& value_set, const arrow::DataType& type);

/// Adds kIntInFunction and kIntInOrNullFunction to `registry`.
arrow::Status RegisterSetKernels(arrow::compute::FunctionRegistry* registry);

/// `expression` with each is_in of a column of `schema` whose value set IntSetIsDense replaced
/// by kIntInFunction or kIntInOrNullFunction. For the executor: plans keep Arrow's name, so plan
/// bytes do not change.
arrow::compute::Expression WithSetKernels(const arrow::compute::Expression& expression,
                                          const arrow::Schema& schema);

}  // namespace sluice::plan
