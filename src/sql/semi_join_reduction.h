// A semi join that hashes its outer side (few outer rows, many inner ones: TPC-DS q95's 147
// orders IN a self-join of web_sales that makes 9M rows) still computes all of its inner side,
// though only the outer rows' keys can match. Here the outer side runs first: its rows become an
// in-memory table that the join reads instead, and its distinct keys a condition `key IN (...)`
// on the inner side, which filter pushdown carries down to the scans, across the inner side's
// own join keys. Sideways information passing, as a first pass before the query runs.
#pragma once

#include <arrow/status.h>

#include <cstdint>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The outer side must be estimated at no more than this many rows: it is held in memory.
inline constexpr double kReduceMaxOuterRows = 100'000;

/// The inner side must scan at least this many rows: below, the first pass costs more than a
/// smaller inner side saves.
inline constexpr double kReduceMinInnerScanRows = 1'000'000;

/// With more distinct keys than this the inner side gets no condition (the outer rows are still
/// read from memory).
inline constexpr int64_t kReduceMaxKeys = 100'000;

/// For each semi join in `plan` that hashes its outer side, on at least one key of an integer
/// type, where the outer side is estimated at no more than kReduceMaxOuterRows and the inner side
/// scans at least kReduceMinInnerScanRows and joins or groups them: runs the outer side and puts
/// its rows in its place (plan::kMemoryFormat), then filters the inner side by the first key's
/// distinct values. Inner joins first, so a semi join above another reads the reduced one. In one
/// process only.
arrow::Status ReduceSemiJoinInputs(PlanNode* plan);

}  // namespace sluice::sql
