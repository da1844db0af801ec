// IN over a set of integers that lie close together, answered from a bitmap over the set's range.
// Arrow's is_in hashes each row into a memo table; the semi join reduction's key sets (TPC-H
// Q20: l_partkey in some 2,000 part keys, for each of 6M lineitem rows) made that a tenth of the
// query. A bit per value of the range costs one load per row instead.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/compute/registry.h>
#include <arrow/status.h>
#include <arrow/type_fwd.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

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

/// A set that IntSetIsDense, as a bit per value of its range: one load answers a row. The IN
/// kernels use it, and so does a join's filter of its probe side by the keys of its hashed side
/// (exec/join_gate.h).
class IntBitSet {
 public:
  /// Whether a set of `type` can be one: an integer or date32 type.
  static bool Holds(const arrow::DataType& type);

  /// The set of `value_set`'s values (an array or chunked array of `type`) where IntSetIsDense;
  /// nullopt otherwise.
  static std::optional<IntBitSet> Make(const arrow::Datum& value_set, const arrow::DataType& type);

  /// Writes to `out` from bit `out_offset` whether each row of `in` (of the set's type) is in the
  /// set; false for a NULL row.
  void Test(const arrow::ArraySpan& in, uint8_t* out, int64_t out_offset) const;

  /// Clears the bits of `mask` (from bit 0, one per row of `in`) of the rows of `in` that are not
  /// in the set, looking up only the rows whose bit is set.
  void Refine(const arrow::ArraySpan& in, uint8_t* mask) const;

  /// Whether `scalar` (of the set's type) is in the set; false for NULL.
  bool Test(const arrow::Scalar& scalar) const;

  const arrow::DataType& type() const { return *type_; }

 private:
  bool Has(uint64_t offset) const {
    const uint64_t bit = offset < size_ ? offset : size_;
    return (words_[bit >> 6] >> (bit & 63)) & 1;
  }

  std::shared_ptr<arrow::DataType> type_;
  uint64_t min_ = 0;   // the least value's bits, as the type's unsigned twin widened
  uint64_t size_ = 0;  // the range's size; bit size_ is 0, the answer for every value outside it
  std::vector<uint64_t> words_;
};

/// Adds kIntInFunction and kIntInOrNullFunction to `registry`.
arrow::Status RegisterSetKernels(arrow::compute::FunctionRegistry* registry);

/// `expression` with each is_in of a column of `schema` whose value set IntSetIsDense replaced
/// by kIntInFunction or kIntInOrNullFunction. For the executor: plans keep Arrow's name, so plan
/// bytes do not change.
arrow::compute::Expression WithSetKernels(const arrow::compute::Expression& expression,
                                          const arrow::Schema& schema);

}  // namespace sluice::plan
