// Runs one plan fragment in this process: the body of `sluice worker`, and of every task of
// `submit --workers 0`.
//
// A job fragment runs as one Arrow Acero plan: a node per operator, Acero's own nodes where
// they fit (the rows of a shuffle scan, read and digest-checked first, enter through an
// exec_batch_source) and sluice's job nodes for the rest (scan_objects_node.h,
// call_transform_node.h, shuffle_write_node.h, dedup_node.h, sink_write_node.h), which pass
// rows object by object (object_chunks.h). The plan runs on one thread, so rows keep the
// deterministic order that __seq, dedup and byte-identical outputs rely on.
//
// The runner rebuilds the session from the fragment's spec (store, artifact cache), loads
// transforms by pin through the verified loader, and returns a report. User and data errors
// come back as a report with status "error" and a message naming the object, line, stage or
// file; the driver does not retry those.
#pragma once

#include <string>

#include "exec/job_task.h"
#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::exec {

TaskReport RunFragment(const plan::Fragment& fragment, const ProgressFn& progress = nullptr);

}  // namespace sluice::exec
