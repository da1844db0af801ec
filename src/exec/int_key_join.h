// An inner hash join on one integer key, for a large hashed side.
// Acero's hash join encodes its hashed side into a row table and a Swiss table while it still
// holds the input batches: for TPC-H Q9's 15M order keys at SF 10 its memory rose by ~900 MB in
// the build, and the build took 2.8 s beside the probe side's scan. Here the hashed side is kept
// as columns (the key as int64, each output column concatenated), found through a flat table of
// row numbers (4 bytes per slot, 2-4 slots per row) with a chain per repeated key only where
// keys repeat: 16-28 bytes per row over its columns. Probe rows that each find exactly one row
// pass on without being copied.
#pragma once

#include <arrow/status.h>

namespace sluice::exec {

/// Acero factory name. Takes HashJoinNodeOptions, as "hashjoin" does, with the probe side as
/// input 0 and the hashed side as input 1, and gives the same output (the probe side's output
/// columns, then the hashed side's, in an unspecified row order). Where it does not apply (a
/// join other than inner; keys other than one int32, int64 or date32 column of one type on both
/// sides; a residual filter; NULL-equal keys; a dictionary column on the hashed side), it makes
/// Acero's "hashjoin" node instead.
inline constexpr char kIntKeyJoinFactory[] = "sluice_int_key_join";

/// Registers kIntKeyJoinFactory with Acero's default registry, once.
arrow::Status RegisterIntKeyJoin();

}  // namespace sluice::exec
