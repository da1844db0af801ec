// A hash join's probe side held back while its build side runs. Acero's hash join queues each
// probe batch that arrives before its hash table is built, so a probe scan that runs beside a
// slow build (Q18's build is an aggregate over lineitem) queues most of its table. The gate lets
// a bounded amount of the probe side through (so the probe scan still overlaps the build), then
// pauses the probe side's sources until the build side has delivered its last row. In a chain of
// joins (each the probe side of the next), the bottom join also waits for the Bloom filters that
// the joins above push down to it, so its probe side waits for their build sides as well. (A
// join that pushes none, as one over a whole table, would queue the rows from below instead:
// the probe side waits for its build side all the same.)
// Once every build side of a chain has ended, the bottom probe side also drops the rows that a
// join above cannot match: each inner join's build side holds its keys as they pass, and where
// they are integers that lie close together (plan::IntBitSet) a probe row whose key is not among
// them is dropped before any join sees it. Acero's Bloom filters answer the same question by
// hashing each key, with false positives; on TPC-H Q5 they and the joins' probes of the rows
// they let through were about a sixth of the query.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/result.h>

namespace sluice::exec {

/// Rewrites a hash join's two inputs: `build` signals when its last batch has passed, and
/// `probe` pauses past a bounded number of bytes until then. Where `probe` is itself a gated
/// hash join (the declarations are built bottom up), the gate at the bottom of that chain waits
/// for `build` too. With `filter_probe`, where the join (of `options`) and each join of the chain
/// below it is inner or a left semi join, the bottom's rows are then filtered by `build`'s values
/// of each key (compared by equality) that both sides name plainly and that is a column of the
/// bottom's rows.
arrow::Status GateProbeOnBuild(arrow::acero::Declaration* probe, arrow::acero::Declaration* build,
                               const arrow::acero::HashJoinNodeOptions& options, bool filter_probe);

}  // namespace sluice::exec
