#include "plan/compute_init.h"

#include <arrow/compute/initialize.h>

#include <mutex>

namespace sluice::plan {

arrow::Status EnsureComputeInitialized() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] { status = arrow::compute::Initialize(); });
  return status;
}

}  // namespace sluice::plan
