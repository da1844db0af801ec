// What every Acero node of one job task shares: the fragment it runs, the store, the report it
// fills in and the progress callback.
//
// A job task (plan::Fragment) runs as one Acero plan (fragment_runner.h) whose nodes each do
// one operator of the fragment. They all report into the same TaskReport and say what they are
// doing through the same callback, so a supervisor that kills the task names the stage and the
// object, as it did when a hand-written loop ran the operators.
//
// Thread-safety: none. A job plan runs on one thread (the runner's serial executor).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "exec/task_report.h"
#include "plan/fragment.h"
#include "storage/object_store.h"

namespace sluice::exec {

/// Told what the task is about to do, before each step ("running stage 'x' on object 'k'"), so
/// that a supervisor that kills the task can say what it was doing.
using ProgressFn = std::function<void(const std::string& doing)>;

struct JobTask {
  const plan::Fragment* fragment = nullptr;
  std::shared_ptr<storage::ObjectStore> store;
  TaskReport* report = nullptr;
  ProgressFn progress;

  void Say(const std::string& doing) const {
    if (progress) progress(doing);
  }

  /// Test-only fault injection: SLUICE_FAILPOINT=<when>:<task>:<attempt|*> SIGKILLs this
  /// process when the task and attempt match. `kill` is called after a task's inputs are
  /// processed and before it writes any output (the worst moment for the driver's retries);
  /// `kill-after-write` after it wrote its shuffle files, leaving a lost attempt's files behind.
  /// `stall` sleeps kStallSeconds at the `kill` point instead, so that a test can kill the
  /// machine (a Ray node) under a running task.
  void MaybeFail(const char* when = "kill") const;
  static constexpr unsigned kStallSeconds = 20;
  /// True when SLUICE_FAILPOINT is `<when>:<task>:<attempt|*>` for this task; the
  /// `corrupt-after-write` point damages a shuffle file this task wrote, as storage might.
  bool AtFailpoint(const char* when) const;
};

}  // namespace sluice::exec
