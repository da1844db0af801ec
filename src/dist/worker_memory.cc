#include "dist/worker_memory.h"

#include <arrow/memory_pool.h>

#include <algorithm>
#include <cstdlib>

namespace sluice::dist {

std::string WorkerMemoryPool(const char* configured, const std::string& preferred,
                             const std::vector<std::string>& supported) {
  if (configured != nullptr && configured[0] != '\0') return configured;
  if (!preferred.empty() &&
      std::find(supported.begin(), supported.end(), preferred) != supported.end()) {
    return preferred;
  }
  return "";
}

std::string UseWorkerMemoryPool(const std::string& preferred) {
  const std::string pool = WorkerMemoryPool(std::getenv(kMemoryPoolVariable), preferred,
                                            arrow::SupportedMemoryBackendNames());
  if (!pool.empty()) setenv(kMemoryPoolVariable, pool.c_str(), /*overwrite=*/1);
  return arrow::default_memory_pool()->backend_name();
}

}  // namespace sluice::dist
