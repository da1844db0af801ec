// What the estimates know of a relation, as the logical plan carries it between the binder and
// the optimizer's join_order pass. The binder attaches a cardinality to every FROM item and
// subquery; a derived table's or subquery's depends on how its own joins are ordered, so it is
// deferred: a function that the pass calls once the inner query is ordered (the pass works
// bottom-up). The arithmetic (selectivities, join estimates) is the SQL layer's
// (sql/optimizer/cardinality.h); this layer only holds the numbers. A copy of a logical plan
// shares its deferred cardinalities and JoinSetResults with the original: order only one of
// them.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

namespace sluice::plan {

/// Columns are named by their plan ids.
struct Cardinality {
  /// Rows before any filter: what join ordering compares.
  double rows = 1;
  /// Rows the relation's plan is estimated to produce: what decides which side to hash.
  double estimate = 1;
  /// Distinct values, where statistics know a bound.
  std::map<std::string, int64_t> distinct;
  /// Integer and date (as days) min/max, where statistics know them.
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;

  /// The distinct values of `id`: its statistic, never more than `rows`; `rows` without one.
  double DistinctBound(const std::string& id) const;
};

/// A cardinality computed when the join_order pass asks for it; an error means the pass asked
/// before the query it depends on was ordered (a bug).
using DeferredCardinality = std::function<arrow::Result<Cardinality>()>;

/// What the join_order pass learned when it ordered one query level's joins: read by the
/// deferred cardinalities of the queries around it.
struct JoinSetResult {
  bool ready = false;
  /// The joins, after each FROM item's own conditions.
  Cardinality joined;
  /// `joined.estimate` after the conditions on scalar subqueries' results as well.
  double filtered = 0;
};

}  // namespace sluice::plan
