// Runs one plan fragment in this process: the body of `sluice worker`, of every task of
// `submit --workers 0`, and of a distributed query's stage tasks. Both front doors' fragments
// are plans of the one plan type (plan/plan_node.h), run on Arrow Acero two ways:
//   - a job's plan (a chain from scan_objects or shuffle_read through transforms and dedup to a
//     shuffle or sink write) runs as one Acero plan of sluice's job nodes (scan_objects_node.h,
//     call_transform_node.h, dedup_node.h, shuffle_write_node.h, sink_write_node.h), which pass
//     rows object by object (object_chunks.h), on one thread, so rows keep the deterministic
//     order that __seq, dedup and byte-identical outputs rely on;
//   - a SQL stage's plan (relational operators over a split scan or shuffle reads, under a
//     shuffle write) is lowered by plan_executor.h and runs on Acero's threads; the worker first
//     checks that the split and the partitions it was sent split the output (stage_shape.h).
// Shuffle reads are read whole and checked against their writers' BLAKE3 and the plan's schema
// before the plan starts.
//
// The runner rebuilds the session from the fragment's spec (store, artifact cache, parity
// checked first), loads transforms by pin through the verified loader, and returns a report.
// User and data errors come back as a report with status "error" and a message naming the
// task and the object, line, stage or file; the driver does not retry those.
#pragma once

#include <string>

#include "exec/job_task.h"
#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::exec {

TaskReport RunFragment(const plan::Fragment& fragment, const ProgressFn& progress = nullptr);

}  // namespace sluice::exec
