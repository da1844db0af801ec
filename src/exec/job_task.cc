#include "exec/job_task.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace sluice::exec {

bool JobTask::AtFailpoint(const char* when) const {
  const char* fp = std::getenv("SLUICE_FAILPOINT");
  if (fp == nullptr || fragment == nullptr) return false;
  const std::string task = std::string(when) + ":" + fragment->task_name() + ":";
  return fp == task + std::to_string(fragment->attempt) || fp == task + "*";
}

void JobTask::MaybeFail(const char* when) const {
  if (AtFailpoint(when)) raise(SIGKILL);
  // Long enough for a test to find the stalled worker and kill its node (test_ray.py).
  if (std::string_view(when) == "kill" && AtFailpoint("stall")) sleep(kStallSeconds);
}

}  // namespace sluice::exec
