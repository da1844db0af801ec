// Comparisons of a uint64 with a signed integer, and of an integer with a float. Arrow compares
// the first two as int64, so on a uint64 column holding a value past 2^63 even `u = i` failed
// the query; they meet in decimal(20, 0) instead, which holds every value of both. (The binder
// reads a literal that is not negative as a uint64 first, which keeps `u = 1` a comparison of
// uint64s that row groups can be pruned by.) Arrow casts an integer beside a float with a
// checked cast, which refused an int64 past 2^53 (`i = d`); it becomes its nearest double, as
// PostgreSQL and DuckDB compare them.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/type_fwd.h>

namespace sluice::plan {

/// `expression` with both operands of each comparison (=, <>, <, <=, >, >=) of a uint64 with a
/// signed integer, over the columns of `schema`, cast to decimal(20, 0), and those of an integer
/// with a float cast to double (rounding the integer). For the executor, as WithDecimalKernels:
/// plans keep the comparison as it was bound.
arrow::compute::Expression WithExactUnsignedComparisons(
    const arrow::compute::Expression& expression, const arrow::Schema& schema);

}  // namespace sluice::plan
