#include "exec/run_both.h"

#include <arrow/util/thread_pool.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace sluice::exec {
namespace {

TEST(RunBoth, RunsBothWithOrWithoutAPool) {
  auto pool = arrow::internal::ThreadPool::Make(2).ValueOrDie();
  for (arrow::internal::Executor* executor : {static_cast<arrow::internal::Executor*>(pool.get()),
                                              static_cast<arrow::internal::Executor*>(nullptr)}) {
    std::atomic<int> ran{0};
    auto one = [&] {
      ++ran;
      return arrow::Status::OK();
    };
    ASSERT_TRUE(RunBoth(executor, one, one).ok());
    EXPECT_EQ(ran.load(), 2);
  }
}

TEST(RunBoth, GivesTheFirstError) {
  auto pool = arrow::internal::ThreadPool::Make(2).ValueOrDie();
  auto ok = [] { return arrow::Status::OK(); };
  auto bad = [] { return arrow::Status::Invalid("second failed"); };
  EXPECT_EQ(RunBoth(pool.get(), ok, bad).message(), "second failed");
  EXPECT_EQ(RunBoth(
                pool.get(), [] { return arrow::Status::Invalid("first failed"); }, bad)
                .message(),
            "first failed");
}

// RunBoth called from a task on `pool`: Invalid unless both pieces ran on the caller's thread.
arrow::Status BothOnTheCallersThread(arrow::internal::ThreadPool* pool) {
  std::thread::id first, second;
  ARROW_RETURN_NOT_OK(RunBoth(
      pool,
      [&] {
        first = std::this_thread::get_id();
        return arrow::Status::OK();
      },
      [&] {
        second = std::this_thread::get_id();
        return arrow::Status::OK();
      }));
  return first == second ? arrow::Status::OK() : arrow::Status::Invalid("on two threads");
}

// With no pool thread free to take the second piece, the caller runs it rather than wait:
// a two-thread pool whose other thread is held until both are done, and a one-thread pool.
TEST(RunBoth, WithNoThreadFreeTheCallerRunsBoth) {
  auto pool = arrow::internal::ThreadPool::Make(2).ValueOrDie();
  std::atomic<bool> release{false};
  ASSERT_TRUE(pool->Spawn([&] {
                    while (!release.load()) std::this_thread::yield();
                  })
                  .ok());
  auto busy = pool->Submit([&pool] { return BothOnTheCallersThread(pool.get()); });
  ASSERT_TRUE(busy.ok());
  const arrow::Status busy_status = busy->status();
  release = true;
  ASSERT_TRUE(busy_status.ok()) << busy_status.ToString();

  auto single = arrow::internal::ThreadPool::Make(1).ValueOrDie();
  auto alone = single->Submit([&single] { return BothOnTheCallersThread(single.get()); });
  ASSERT_TRUE(alone.ok());
  ASSERT_TRUE(alone->status().ok()) << alone->status().ToString();
}

}  // namespace
}  // namespace sluice::exec
