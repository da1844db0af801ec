#include "dist/worker_memory.h"

#include <arrow/memory_pool.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
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

// In a fresh process (the "threadsafe" death-test style re-executes this binary), where the
// default pool is still unchosen, as in a worker that has just started.
TEST(WorkerMemoryPoolTest, AWorkerAllocatesFromThePreferredPoolWhereArrowHasIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto supported = arrow::SupportedMemoryBackendNames();
  const bool has_jemalloc =
      std::find(supported.begin(), supported.end(), "jemalloc") != supported.end();
  EXPECT_EXIT(
      {
        unsetenv(kMemoryPoolVariable);
        const std::string used = UseWorkerMemoryPool("jemalloc");
        const bool right = used == arrow::default_memory_pool()->backend_name() &&
                           (!has_jemalloc || used == "jemalloc");
        std::fprintf(stderr, "pool: %s\n", used.c_str());
        std::exit(right ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "pool: ");
}

}  // namespace
}  // namespace sluice::dist
