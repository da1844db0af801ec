// GROUP BY one integer column, or two 32-bit ones (two interned strings: TPC-H Q1's flags), with
// Arrow's hash aggregate kernels but a grouper of our own.
// Arrow's grouper encodes each key into a row table and a Swiss table that both grow by
// doubling, per thread, and then merges the threads' tables into one: for TPC-H Q18's 1.5M
// order keys that is ~80 MB and about a third of the query's CPU. Here a key maps to its group
// through a flat table of group ids over a dense vector of keys (12-16 bytes per group); two
// 32-bit keys are one 64-bit key.
#pragma once

#include <arrow/status.h>
#include <arrow/type_fwd.h>

#include <vector>

namespace sluice::exec {

/// Acero factory name. Takes AggregateNodeOptions, as "aggregate" does, and gives the same
/// output (the key, then the aggregates, in an unspecified row order). Where its grouper does
/// not apply (keys other than one int32, int64 or date32, or two int32 or date32; segment keys;
/// a function without an exact hash kernel), it makes Arrow's "aggregate" node instead.
inline constexpr char kIntKeyAggregateFactory[] = "sluice_int_key_aggregate";

/// Whether the factory groups keys of these types itself: one int32, int64 or date32, or two
/// int32 or date32.
bool GroupsKeysOfTypes(const std::vector<arrow::Type::type>& key_types);

/// Registers kIntKeyAggregateFactory with Acero's default registry, once.
arrow::Status RegisterIntKeyAggregate();

}  // namespace sluice::exec
