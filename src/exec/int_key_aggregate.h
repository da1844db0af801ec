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

#include <cstdint>
#include <vector>

namespace sluice::exec {

/// Acero factory name. Takes AggregateNodeOptions, as "aggregate" does, and gives the same
/// output (the key, then the aggregates, in an unspecified row order). Where its grouper does
/// not apply (keys other than one int32, int64 or date32, or two int32 or date32; segment keys;
/// a function without an exact hash kernel), it makes Arrow's "aggregate" node instead.
inline constexpr char kIntKeyAggregateFactory[] = "sluice_int_key_aggregate";

/// The same, for an aggregate whose consumer adds its rows up by key again (eager aggregation's
/// grouping below a join): once a thread has seen kPassCheckRows rows and holds more than one
/// group per kPassMinRowsPerGroup of them, grouping is not shrinking its input, and its later
/// batches pass through, each row its own group (a row's count, sum, min or max). TPC-DS q23's
/// item by date grouped 1.66M rows into 1.49M groups, a cache miss per row, for nothing.
inline constexpr char kPartialIntKeyAggregateFactory[] = "sluice_partial_int_key_aggregate";
inline constexpr int64_t kPassCheckRows = 128 * 1024;
inline constexpr int64_t kPassMinRowsPerGroup = 2;

/// Whether the factory groups keys of these types itself: one int32, int64 or date32, or two
/// int32 or date32.
bool GroupsKeysOfTypes(const std::vector<arrow::Type::type>& key_types);

/// Registers kIntKeyAggregateFactory and kPartialIntKeyAggregateFactory with Acero's default
/// registry, once.
arrow::Status RegisterIntKeyAggregate();

}  // namespace sluice::exec
