// ORDER BY ... LIMIT over one Parquet table reads the sort key first. A top-N must see every
// row, but only the rows that reach its k-th key can be in the answer: a first pass over the
// first sort key's column alone (and the columns the query filters on) finds that key, and the
// query then runs with `key >= k-th` (or `<=`) pushed into its scan, whose row groups'
// statistics skip every group without such a row. `ORDER BY l_extendedprice DESC LIMIT 5` then
// reads l_comment from a few row groups instead of all of lineitem. DuckDB gets the same from a
// filter its top-N pushes into the scan as it runs.
#pragma once

#include <arrow/status.h>

#include "sql/plan_node.h"

namespace sluice::sql {

/// Above this many rows (LIMIT plus OFFSET) the first pass is not tried: the top rows would
/// spread over most row groups, and the pass would only add a read of the key.
inline constexpr int64_t kTopNBoundMaxRows = 1'000;

/// For `plan` a Limit over a Sort over projections and filters of one Parquet scan, whose first
/// sort key is a scan column of an integer, decimal, date, timestamp or string type and which
/// reads columns the first pass does not: runs the first pass and adds its bound to the scan's
/// pushed-down filter (row groups only: every row of a group read still reaches the top-N).
/// Leaves `plan` as it is where that does not apply, where the first pass finds fewer rows than
/// the limit needs, or a NULL among them.
arrow::Status BoundTopNScan(PlanNode* plan);

}  // namespace sluice::sql
