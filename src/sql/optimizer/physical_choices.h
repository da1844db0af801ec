// Physical choices made from estimates: which side of a join to hash, and how many rows a scan
// reads per batch. They change how much memory and time a plan takes, never its results.
// (Where the binder still decides a join's build side as it binds, it asks HashOuterSide, so
// the rule lives here once; moving the decision to a pass needs estimates on the plan.)
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

/// Sets every scan's batch size from the most rows any hash join of `plan` is estimated to
/// build: kSmallScanBatchRows from kLargeBuildRows on, PlanNode's default below.
void ChooseScanBatchRows(PlanNode* plan, double largest_build_rows);

}  // namespace sluice::sql
