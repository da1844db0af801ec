// Semi and anti joins: where an EXISTS or IN subquery joins the outer query. The join_order
// pass (join_order.h) makes a SemiJoin of each semi or anti join that decorrelate left above a
// query level's FROM items, and asks these functions where it goes.
#pragma once

#include <arrow/compute/expression.h>

#include <memory>
#include <string>
#include <vector>

#include "sql/optimizer/join_order.h"
#include "sql/plan_node.h"

namespace sluice::sql {

/// An EXISTS or IN subquery in WHERE, run as a semi or anti join.
struct SemiJoin {
  std::unique_ptr<PlanNode> plan;
  std::vector<std::string> outer_keys;
  std::vector<std::string> inner_keys;
  arrow::compute::Expression filter = arrow::compute::literal(true);
  bool anti = false;
  double estimate = 1;  // the subquery's rows
  // Where an outer key is an expression (`x + 1 IN (...)`): the projection (keep_input, no
  // input yet) that computes it on the outer rows, right under the join.
  std::unique_ptr<PlanNode> key_project;
};

/// `plan` semi or anti joined to `semi`, with `outer_estimate` (the rows of `plan`) and the
/// subquery's estimate on the join, from which the build_sides pass (physical_choices.h)
/// chooses the side to hash.
std::unique_ptr<PlanNode> ApplySemiJoin(std::unique_ptr<PlanNode> plan, SemiJoin semi,
                                        double outer_estimate);

/// A semi or anti join on the columns of one FROM item other than the largest (by rows before
/// filters) runs on that item before the joins: it shrinks a build side (TPC-H Q18's IN keeps
/// 57 of 1.5M orders before they meet lineitem). On the largest item, the joins usually filter
/// more first. Applies those to `relations` (each halving the item's estimate) and returns the
/// others, in order, for ApplySemiJoins after the joins.
std::vector<SemiJoin> PlaceSemiJoins(std::vector<JoinInput>* relations,
                                     std::vector<SemiJoin> semi_joins);

/// `plan` (estimated `estimate` rows) semi or anti joined to each of `semi_joins` in order.
/// They go right after the joins: they only drop rows and read no scalar subquery's result, so
/// a correlated scalar subquery is then joined to fewer rows (Q20: 8.5K partsupp rows, not
/// 800K).
std::unique_ptr<PlanNode> ApplySemiJoins(std::unique_ptr<PlanNode> plan,
                                         std::vector<SemiJoin> semi_joins, double estimate);

}  // namespace sluice::sql
