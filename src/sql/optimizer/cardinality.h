// Cardinality estimates: how many rows a relation, a filter and a join produce. They are only a
// guide for choosing join order and which side of a join to hash, never for results, so they
// use the classic defaults (System R's) where statistics say nothing, Parquet min/max
// statistics where they do, and |A join B| = |A| |B| / max(distinct keys).
#pragma once

#include <arrow/compute/expression.h>

#include <vector>

#include "plan/cardinality.h"

namespace sluice::sql {

/// The share of rows a condition keeps when no statistic speaks for it.
inline constexpr double kDefaultSelectivity = 0.5;
/// `column < constant` and the like on a column without range statistics.
inline constexpr double kRangeSelectivity = 1.0 / 3;
/// `column LIKE pattern`.
inline constexpr double kLikeSelectivity = 0.1;
/// The distinct values assumed of a column without statistics (an equality keeps 1/10).
inline constexpr double kUnknownDistinct = 10;
/// The least share a range on a column with statistics keeps: an empty or inverted window is
/// still estimated at a few rows, never zero.
inline constexpr double kMinRangeSelectivity = 1e-4;
/// A semi or anti join is estimated to keep 1 in this many rows.
inline constexpr double kSemiJoinReduction = 2;
/// A HAVING clause is estimated to keep 1 in this many groups (as a range would).
inline constexpr double kHavingReduction = 3;

/// What the estimates know of a relation (plan/cardinality.h: the logical plan carries it).
using plan::Cardinality;

/// The share of rows `e` keeps: an equality one distinct value's share, a range its window of
/// the column's min/max (kRangeSelectivity without them), LIKE kLikeSelectivity, IN its values'
/// share, NOT the rest, OR the sum (at most 1), AND as ConjunctionSelectivity.
double Selectivity(const arrow::compute::Expression& e, const Cardinality& r);

/// The share of rows all of `conjuncts` keep. Range conditions on one column intersect (a
/// month of seven years is 1/84, not the product of its two halves); the rest multiply.
double ConjunctionSelectivity(const std::vector<arrow::compute::Expression>& conjuncts,
                              const Cardinality& r);

/// |A join B| = |A| |B| / `key_distinct`, the most distinct values of either side's key (at
/// least one row).
double JoinEstimate(double left, double right, double key_distinct);

/// The rows left after a semi or anti join over `rows` (at least one).
double SemiJoinEstimate(double rows);

/// The groups left after a HAVING over `groups`.
double HavingEstimate(double groups);

}  // namespace sluice::sql
