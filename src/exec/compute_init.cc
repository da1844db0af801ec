#include "exec/compute_init.h"

#include <arrow/compute/initialize.h>

#include <mutex>

namespace sluice::exec {

arrow::Status EnsureComputeInitialized() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] { status = arrow::compute::Initialize(); });
  return status;
}

}  // namespace sluice::exec
