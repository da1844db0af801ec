// Runs one plan fragment in this process: the body of `sluice worker`.
//
// The runner rebuilds the session from the fragment's spec (store, artifact cache), loads
// transforms by pin through the verified loader, and returns a report. User and data errors
// come back as a report with status "error" and a message naming the object, line, stage or
// file; the driver does not retry those.
#pragma once

#include <functional>
#include <string>

#include "exec/task_report.h"
#include "plan/fragment.h"

namespace sluice::exec {

/// Told what the task is about to do, before each step ("running stage 'x' on object 'k'"), so
/// that a supervisor that kills the task can say what it was doing.
using ProgressFn = std::function<void(const std::string& doing)>;

TaskReport RunFragment(const plan::Fragment& fragment, const ProgressFn& progress = nullptr);

}  // namespace sluice::exec
