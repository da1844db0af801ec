// Which broadcast scans of a map stage a task may read only in part: those whose rows meet the
// split scan's rows only on an equi-join key. A task's share of the split table holds keys in
// the range its row groups' statistics give; a build-side row whose key lies outside that range
// matches no row of the task, so the task reads only the build table's row groups whose key
// range overlaps it. Where the tables are stored in key order (TPC-H's lineitem and orders by
// order key), each of N tasks reads about 1/N of the build table instead of all of it.
//
// Sound for a join whose build side's unmatched rows are dropped (inner, left, semi, anti, on
// `right`; inner also the other way round), with keys that never match NULL: dropping build
// rows that match nothing leaves the join's output as it was. The key must pass unchanged from
// the split scan to the join's probe side (filters, projections that rename it, joins) and from
// the build scan to its build side (the same, and aggregates that group on it). Only integer keys
// of one type on both sides are used, since only those have statistics compared as the join
// compares them, and only where both tables hold the key in about key order (their row groups'
// ranges barely overlap), since otherwise no row group can be skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan_node.h"

namespace sluice::plan {

/// A broadcast scan of a stage that each task reads only where `scan_column` overlaps the range
/// of `split_column` in the task's share of the split scan (both file columns).
struct SplitKeyRange {
  const PlanNode* scan = nullptr;
  std::string scan_column;
  std::string split_column;
  /// The join's key names on the probe and build sides: EXPLAIN's text.
  std::string probe_key;
  std::string build_key;
};

/// The key ranges of the stage whose plan is `root` and whose split scan is `split` (a scan in
/// `root`'s subtree), in pre-order of their joins.
std::vector<SplitKeyRange> SplitKeyRanges(const PlanNode& root, const PlanNode& split);

/// The range [min, max] of the integer column `column` over the row groups `table` reads (all of
/// them, or its row_group_ranges), from `whole`'s footer statistics (`table` is a share of
/// `whole`'s files), or none where a row group has no statistics for it.
std::optional<std::pair<int64_t, int64_t>> ShareKeyRange(const TableSource& whole,
                                                         const TableSource& table,
                                                         const std::string& column);

/// `scan` with `column` (a file column it reads) restricted to [lo, hi] in its pushed-down
/// filter: row groups whose statistics lie outside are not read.
void RestrictScan(PlanNode* scan, const std::string& column, int64_t lo, int64_t hi);

}  // namespace sluice::plan
