#include "dist/worker_memory.h"

#include <arrow/memory_pool.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace sluice::dist {
namespace {

TEST(WorkerMemoryPoolTest, TheUsersChoiceWinsThenThePreferredPoolThenArrowsDefault) {
  const std::vector<std::string> all = {"mimalloc", "jemalloc", "system"};
  EXPECT_EQ(WorkerMemoryPool("system", "jemalloc", all), "system");
  EXPECT_EQ(WorkerMemoryPool(nullptr, "jemalloc", all), "jemalloc");
  EXPECT_EQ(WorkerMemoryPool("", "jemalloc", {"jemalloc", "system"}), "jemalloc");
  EXPECT_EQ(WorkerMemoryPool(nullptr, "jemalloc", {"mimalloc", "system"}), "");
  EXPECT_EQ(WorkerMemoryPool(nullptr, "", all), "");
}

// Each test runs in a process of its own (gtest_discover_tests), so the default pool is still
// unchosen here, as in a worker that has just started.
TEST(WorkerMemoryPoolTest, AWorkerAllocatesFromThePreferredPoolWhereArrowHasIt) {
  unsetenv(kMemoryPoolVariable);
  const auto supported = arrow::SupportedMemoryBackendNames();
  const bool has_jemalloc =
      std::find(supported.begin(), supported.end(), "jemalloc") != supported.end();
  const std::string used = UseWorkerMemoryPool("jemalloc");
  EXPECT_EQ(used, arrow::default_memory_pool()->backend_name());
  if (has_jemalloc) {
    EXPECT_EQ(used, "jemalloc");
  }
}

}  // namespace
}  // namespace sluice::dist
