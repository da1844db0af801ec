// Outer joins that the WHERE makes inner, or anti. A WHERE condition that is never true where a
// left join's joined side is NULL drops every row that the join padded, so the join keeps only the
// rows an inner join keeps: TPC-DS q93 writes `store_sales left outer join store_returns on
// (...), reason where sr_reason_sk = r_reason_sk and r_reason_desc = 'reason 28'`, and joined all
// 2.9M sales rows to their returns before the one reason kept 3.7K of them. As an inner join its
// sides become FROM items of the level like any other, and join ordering can join the returns to
// their reason first. Every DBMS does this (PostgreSQL's reduce_outer_joins).
#pragma once

#include <arrow/status.h>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The outer_join_simplification pass: in every query level, each FROM item that is a left join
/// whose joined side some conjunct of the level's WHERE rejects the NULLs of (a comparison,
/// arithmetic, LIKE, IN or IS NOT NULL over one of that side's columns; not IS NULL, COALESCE or
/// CASE, which may be true there) becomes its two sides as FROM items, its ON condition WHERE
/// conjuncts. Repeats while a level has such a join (a chain of left joins). A left join item
/// whose WHERE conjunct `key IS NULL` tests a key of the joined side (NULL only in the rows the
/// join padded), and whose joined side nothing else reads, becomes an anti join without that
/// conjunct (TPC-DS q78's sales without returns). Runs after decorrelate and before
/// outer_join_conditions and join_order.
arrow::Status SimplifyOuterJoins(PlanNode* plan);

}  // namespace sluice::sql
