// A hash join's probe side held back while its build side runs. Acero's hash join queues each
// probe batch that arrives before its hash table is built, so a probe scan that runs beside a
// slow build (Q18's build is an aggregate over lineitem) queues most of its table. The gate lets
// a bounded amount of the probe side through (so the probe scan still overlaps the build), then
// pauses the probe side's sources until the build side has delivered its last row.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/result.h>

namespace sluice::exec {

/// Rewrites a hash join's two inputs: `build` signals when its last batch has passed, and
/// `probe` pauses past a bounded number of bytes until then.
arrow::Status GateProbeOnBuild(arrow::acero::Declaration* probe, arrow::acero::Declaration* build);

}  // namespace sluice::exec
