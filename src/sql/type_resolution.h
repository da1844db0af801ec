// PostgreSQL's rule for the type of values that meet in one column (the sides of UNION,
// INTERSECT and EXCEPT): integers widen to the wider integer, integers and numerics to a numeric
// that holds both, anything with a float to double precision; NULL takes the other's type.
#pragma once

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <memory>

namespace sluice::sql {

/// The type both `a` and `b` convert to, or TypeError naming both where there is none.
arrow::Result<std::shared_ptr<arrow::DataType>> CommonType(
    const std::shared_ptr<arrow::DataType>& a, const std::shared_ptr<arrow::DataType>& b);

/// A type that holds every value of integer or decimal types `a` and `b` exactly (one of them
/// where it holds the other's), or null where they are not both such types or none within 38
/// digits does: int16 for int16 and uint8, int32 for int16 and uint16, decimal(20, 0) for int64
/// and uint64, decimal(12, 2) for decimal(12, 2) and int8. Unlike CommonType, which types a
/// result column, this picks a type both sides can be cast to without failing, as a join key.
std::shared_ptr<arrow::DataType> ExactCommonType(const std::shared_ptr<arrow::DataType>& a,
                                                 const std::shared_ptr<arrow::DataType>& b);

}  // namespace sluice::sql
