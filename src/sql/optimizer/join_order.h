// Join order: FROM items and the WHERE conditions over them become a tree of hash joins on the
// conditions' equalities. The order is greedy from cardinality estimates (cardinality.h), which
// count each item's own conditions; the conditions themselves come back for a Filter above the
// joins, and the filter_pushdown pass (filter_pushdown.h) moves them down to their items.
//
// The join_order pass (OrderJoinSets) does this for every query level of a logical plan, inner
// levels first: a derived table's or subquery's estimate depends on how its own joins were
// ordered, and the levels around it read that estimate (plan/cardinality.h). It also places each
// level's semi joins (semi_joins.h) and fills the estimates on every join, which the physical
// planner's passes read.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/result.h>

#include <memory>
#include <string>
#include <vector>

#include "sql/optimizer/cardinality.h"
#include "sql/plan_node.h"

namespace sluice::sql {

/// A branch of the join graph (relations that meet the probing one through one root) joins on
/// its own first where its other relations keep at most this share of the root's rows.
inline constexpr double kBranchShare = 0.5;

/// The largest cross product OrderJoins plans, in estimated rows.
inline constexpr double kMaxCrossJoinRows = 1e8;

/// A FROM item as join ordering sees it: its plan, the ids of its columns, its name in FROM (for
/// messages) and its estimates.
struct JoinInput : Cardinality {
  std::unique_ptr<PlanNode> plan;
  std::vector<std::string> ids;
  std::string name;
};

/// `input` filtered by the AND of `conjuncts` (none: `input` itself).
std::unique_ptr<PlanNode> WithFilter(std::unique_ptr<PlanNode> input,
                                     const std::vector<arrow::compute::Expression>& conjuncts);

/// (a AND x) OR (b AND x) is x AND ((a) OR (b)): the conjuncts of `e` with the conditions
/// common to every OR branch factored out (TPC-H Q19 repeats its join key in every branch).
std::vector<arrow::compute::Expression> FactorOr(const arrow::compute::Expression& e);

/// `relations` joined by the equalities among `conditions` (split into conjuncts, with ORs
/// factored by FactorOr); an equality whose two sides each read one other relation is a key, an
/// expression side (t1.k = t2.k + 1) computed first by a projection on its relation. The
/// result is the join tree alone: every conjunct that is no join key
/// is appended to `*filters` in the order it came, for a Filter above the joins that the
/// filter_pushdown pass places; an OR over several relations is followed by the weaker copy it
/// implies on each of them (which the estimates count), and an equality between two relations
/// that other keys joined comes last.
/// Conditions that read a column of none of `relations` (a scalar subquery's result, joined
/// later) go to `rest` instead. Each join carries the estimates of its two sides (for the
/// physical planner's passes). Relations with no equality to the others are joined last, as a
/// cross product on a constant key, the smallest first; one estimated above kMaxCrossJoinRows
/// (both sides above one row) is a "not supported: a cross join" error.
///
/// The relation estimated largest after its filters probes; each step then hashes the connected
/// relation whose join multiplies the rows least (rows after filters per distinct key value),
/// ties going to the smaller relation. A branch of the other relations that meets the probing
/// one only through one of them, by equalities, and whose filtered dimensions keep at most
/// kBranchShare of that one's rows, is ordered the same way on its own first and then taken as
/// one relation: a bushy plan whose build side holds only the rows that can match. So is a
/// branch that meets the probing one through several of its relations on keys of different
/// classes, where so ordered it is estimated at most kBranchShare of its largest relation's
/// rows: it then joins the probing relation on all those keys at once.
arrow::Result<JoinInput> OrderJoins(std::vector<JoinInput> relations,
                                    const std::vector<arrow::compute::Expression>& conditions,
                                    std::vector<arrow::compute::Expression>* filters,
                                    std::vector<arrow::compute::Expression>* rest);

/// A join of a query level's subqueries between its WHERE Filter and its FROM items (as
/// decorrelate leaves them): a semi, anti or left join, or the constant key an uncorrelated
/// scalar subquery's left join reads.
bool IsSubqueryStep(const PlanNode& n);

/// Whether `filter` is a query level's WHERE: a Filter over the joins of its subqueries over a
/// kJoinSet. The binder makes one for every query level, and one for each side of an outer
/// join (its FROM items and ON conditions).
bool IsLevelFilter(const PlanNode& filter);

/// The join_order pass. Each kJoinSet, with the conditions of the Filter above it (through the
/// semi and left joins of its subqueries, which decorrelate made), becomes OrderJoins' tree; the
/// semi joins go where PlaceSemiJoins says, the left joins above them, and the conditions in a
/// Filter on top. An uncorrelated scalar subquery whose result WHERE compares with one FROM
/// item's columns alone is joined to that item instead, with those conditions, before the joins.
/// Every deferred estimate on a join is filled. Runs after decorrelate. Its one user error is
/// OrderJoins' "not supported: a cross join"; any other is a bug (a logical plan the binder did not
/// make).
arrow::Status OrderJoinSets(PlanNode* plan);

}  // namespace sluice::sql
