// Runs one plan fragment in this process: the body of `sluice worker`.
//
// The runner rebuilds the session from the fragment's spec (store, artifact cache), loads
// transforms by pin through the verified loader, and returns a report. User and data errors
// come back as a report with status "error" and a message naming the object, line, stage or
// file; the driver does not retry those.
#pragma once

#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::exec {

TaskReport RunFragment(const plan::Fragment& fragment);

}  // namespace sluice::exec
