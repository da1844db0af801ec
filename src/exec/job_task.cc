#include "exec/job_task.h"

#include <signal.h>

#include <cstdlib>

namespace sluice::exec {

bool JobTask::AtFailpoint(const char* when) const {
  const char* fp = std::getenv("SLUICE_FAILPOINT");
  if (fp == nullptr || fragment == nullptr) return false;
  const std::string task = std::string(when) + ":" + fragment->task_name() + ":";
  return fp == task + std::to_string(fragment->attempt) || fp == task + "*";
}

void JobTask::MaybeFail(const char* when) const {
  if (AtFailpoint(when)) raise(SIGKILL);
}

}  // namespace sluice::exec
