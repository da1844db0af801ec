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

}  // namespace sluice::sql
