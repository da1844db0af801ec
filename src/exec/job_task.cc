#include "exec/job_task.h"

#include <signal.h>

#include <cstdlib>

namespace sluice::exec {

void JobTask::MaybeFail(const char* when) const {
  const char* fp = std::getenv("SLUICE_FAILPOINT");
  if (fp == nullptr || fragment == nullptr) return;
  const std::string task = std::string(when) + ":" + fragment->task_name() + ":";
  if (fp == task + std::to_string(fragment->attempt) || fp == task + "*") raise(SIGKILL);
}

}  // namespace sluice::exec
