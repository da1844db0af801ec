// Arrow 26 keeps most compute kernels in libarrow_compute, whose function registry must be
// initialised explicitly before sort_indices and friends exist. Every exec entry point that
// calls compute functions goes through this; it is cheap after the first call.
#pragma once

#include <arrow/status.h>

namespace sluice::plan {

/// Registers Arrow's compute kernels once per process. Thread-safe.
arrow::Status EnsureComputeInitialized();

}  // namespace sluice::plan
