#include "dist/worker_memory.h"

#include <arrow/memory_pool.h>

#include <algorithm>
#include <cstdlib>

namespace sluice::dist {

std::string WorkerMemoryPool(const char* configured, const std::vector<std::string>& supported) {
  if (configured != nullptr && configured[0] != '\0') return configured;
  if (std::find(supported.begin(), supported.end(), "jemalloc") != supported.end()) {
    return "jemalloc";
  }
  return "";
}

std::string UseWorkerMemoryPool() {
  const std::string pool =
      WorkerMemoryPool(std::getenv(kMemoryPoolVariable), arrow::SupportedMemoryBackendNames());
  if (!pool.empty()) setenv(kMemoryPoolVariable, pool.c_str(), /*overwrite=*/1);
  return arrow::default_memory_pool()->backend_name();
}

}  // namespace sluice::dist
