// The physical planner's choices, made from the estimates the join_order pass leaves on each join
// (PlanNode::input_estimate, right_estimate): which side of a left, semi or anti join to hash,
// and how many rows a scan reads per batch. They change how much memory and time a plan takes,
// never its results. (Where aggregates split and exchanges go is stage_planner.h.)
#pragma once

#include <cstdint>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The outer side of a left, semi or anti join is hashed when it is estimated this many times
/// smaller than the other. Estimates are rough, so a near tie keeps hashing the inner side,
/// whose result is often small in ways no estimate sees (Q18's HAVING keeps 57 of 1.5M groups).
inline constexpr double kHashOuterRatio = 4;

/// A hash join estimated to build at least this many rows takes long enough that the batches
/// streaming toward it pile up: scans then read kSmallScanBatchRows-row batches instead of
/// 128K. TPC-H SF1 peak RSS: Q3 272 -> 189 MiB, Q5 305 -> 175, Q8 365 -> 189, Q9 665 -> 335,
/// for 5-10 % more time; plans that only build small, filtered sides (Q12, Q14, Q19: 25-50 %
/// slower with small batches) and join-free ones (Q1, Q6) keep 128K.
inline constexpr double kLargeBuildRows = 100'000;
inline constexpr int64_t kSmallScanBatchRows = 32 * 1024;

/// Whether a left, semi or anti join hashes its outer (preserved) side rather than the other:
/// when the outer side is estimated clearly (kHashOuterRatio) smaller. TPC-H Q21's EXISTS over
/// all of lineitem hashes the few outer rows and streams lineitem past them; Q13 hashes 150K
/// customers, not 1.5M orders.
bool HashOuterSide(double outer_estimate, double other_estimate);

/// The build_sides pass: every left, semi or anti join with both estimates hashes its outer side
/// where HashOuterSide says so, and its inner side otherwise. An inner join hashes `right`, which
/// join ordering chose, unless `input` is estimated clearly (kHashOuterRatio) smaller in bytes
/// (rows times a guess of each column's width): then its sides swap, under a project that keeps
/// its column order (unless a project is already above it). TPC-H Q10 then hashes the joined
/// lineitem and orders rows and streams customer's four string columns past them.
void ChooseBuildSides(PlanNode* plan);

/// The most rows any hash join of `plan` is estimated to build (0 with no estimates).
double LargestBuildRows(const PlanNode& plan);

/// The scan_batch_rows pass: every scan's batch size from LargestBuildRows: kSmallScanBatchRows
/// from kLargeBuildRows on, PlanNode's default below.
void ChooseScanBatchRows(PlanNode* plan);

}  // namespace sluice::sql
