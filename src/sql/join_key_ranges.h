// A hash join whose build side is a filtered dimension (TPC-DS q37's 60 days of date_dim) and
// whose probe side scans a table clustered on the join key (inventory is written in date order:
// 6 row groups of 2M rows, each a span of the dates) can match only in the row groups whose
// statistics meet the range of the dimension's keys. A first pass reads that range from the
// dimension, and the probe scan's pushed-down filter gets it, so its row groups outside are
// never read. DuckDB's hash joins push the same range into their probe scans as they run.
// A side of inner joins is bounded too where its key comes from a small table that those joins
// restrict (TPC-DS q72: inventory's days are those of the weeks of 1999, a second reading of
// date_dim joined on d_week_seq to the first): each join's other side bounds the keys it meets,
// down to the small filtered dimensions under it, and the key's table is read within those
// bounds.
#pragma once

#include <arrow/status.h>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The dimension's table may have at most this many rows: the first pass reads it once more.
inline constexpr int64_t kKeyRangeMaxBuildRows = 100'000;

/// The dimension's filters must be estimated to keep at most this share of its rows: wider, its
/// keys likely span most of the probe table. (An IN list of strings is estimated at a third of
/// the rows per three values, whatever they are: TPC-DS q17's three quarters of 200 years.)
inline constexpr double kKeyRangeMaxShare = 0.5;

/// A table counts as clustered on a column when its row groups' spans of the column, added up,
/// are under this many times the column's whole span (nearly disjoint, as when sorted; two row
/// groups that each span everything add up to twice).
inline constexpr double kClusteredSpanRatio = 1.5;

/// The rows of the row groups read that fall outside the range are filtered on the scan where it
/// spans at most this share of the column's values (from row group statistics): a filter costs a
/// few nanoseconds a row, a hash join's probe several times that. TPC-DS q82 reads two of
/// inventory's row groups, 3.9M rows, for the 405K of its 61 days.
inline constexpr double kKeyRangeRowFilterShare = 0.5;

/// For each inner or semi join in `plan` that hashes its right side, where that side is filters
/// and projections over one scan of a table of at most kKeyRangeMaxBuildRows rows whose filters
/// keep at most kKeyRangeMaxShare of them (by the join's estimate), or is inner joins, filters
/// and projections down to a table of at most that many rows that has the key, filtered or met
/// by a join whose other side bounds its keys (bounded the same way, from the filtered tables of
/// at most that many rows under it), and where a join key passes up unchanged from a Parquet scan
/// on the probe side (through filters, projections and the joins' sides that keep its rows) whose
/// table has two or more row groups clustered on that integer column: runs the first pass over the
/// right side and, where the range leaves out a row group, adds `key >= min AND key <= max` to that
/// scan's pushed-down filter (row groups only), and where it also spans at most
/// kKeyRangeRowFilterShare of the column's values, puts the same filter on the scan's rows. Leaves
/// a join as it is where the right side is empty.
arrow::Status BoundJoinKeyRanges(PlanNode* plan);

}  // namespace sluice::sql
