// Group keys that another key determines. TPC-DS q23 groups store sales by
// (substr(i_item_desc, 1, 30), i_item_sk, d_date) and then reads only the item keys: the
// description's 1.49M string keys cost two thirds of that grouping, yet i_item_sk is unique in
// item, so each item key has one description and the groups are the same without it. A key
// computed from one table's columns alone is determined by a key that is a column unique in that
// table (and NULL-free there: rows a join null-extends have NULL in all of that table's columns).
// Nothing in the catalog declares a key, so uniqueness is read from the data, as a first pass
// before the query runs, for tables of at most kUniqueProbeMaxRows rows.
#pragma once

#include <arrow/status.h>

#include <cstdint>

#include "sql/plan_node.h"

namespace sluice::sql {

/// A column is checked for uniqueness only in tables of at most this many rows (dimensions, not
/// fact tables): reading the column must cost little beside the query. An integer column whose
/// range in the footers holds fewer values than the table has rows is not read at all.
inline constexpr int64_t kUniqueProbeMaxRows = 1'000'000;

/// For each final aggregate (over its partial step) in `plan`, drops the group keys that nothing
/// above it reads, where another of its keys is an integer column, NULL-free and unique in its
/// table, and
/// the dropped key is computed from that table's columns alone; then drops the projections above
/// that read only them, and the scans' columns nothing reads any more. Changes no result. In one
/// process only, since it reads the data (not for a plain EXPLAIN).
arrow::Status DropDeterminedGroupKeys(PlanNode* plan);

}  // namespace sluice::sql
