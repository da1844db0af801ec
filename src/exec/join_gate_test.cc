#include "exec/join_gate.h"

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/api.h>
#include <arrow/compute/exec.h>
#include <arrow/io/interfaces.h>
#include <arrow/util/future.h>
#include <arrow/util/thread_pool.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace sluice::exec {
namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

constexpr int64_t kRowsPerBatch = 8192;  // 64 KiB of int64 keys

std::shared_ptr<arrow::Schema> KeySchema(const std::string& name) {
  return arrow::schema({arrow::field(name, arrow::int64())});
}

cp::ExecBatch Keys(int64_t first, int64_t rows, int64_t modulo) {
  arrow::Int64Builder builder;
  EXPECT_TRUE(builder.Reserve(rows).ok());
  for (int64_t i = 0; i < rows; ++i) builder.UnsafeAppend((first + i) % modulo);
  return cp::ExecBatch({builder.Finish().ValueOrDie()}, rows);
}

// A source of `batches` key batches, counting the batches it has handed out.
ac::Declaration CountedSource(const std::string& name, int batches, int64_t modulo,
                              std::shared_ptr<std::atomic<int>> produced,
                              std::function<void()> before_each = nullptr,
                              std::function<void()> at_end = nullptr) {
  auto next = std::make_shared<std::atomic<int>>(0);
  std::function<arrow::Future<std::optional<cp::ExecBatch>>()> generator =
      [=]() -> arrow::Future<std::optional<cp::ExecBatch>> {
    const int i = next->fetch_add(1);
    if (i >= batches) {
      if (at_end && i == batches) at_end();
      return arrow::Future<std::optional<cp::ExecBatch>>::MakeFinished(std::nullopt);
    }
    // Made on the IO pool, as a file scan's batches are, so that the waits below hold no CPU
    // thread that the plan's tasks need.
    auto made = arrow::io::default_io_context().executor()->Submit(
        [=]() -> arrow::Result<std::optional<cp::ExecBatch>> {
          if (before_each) before_each();
          produced->fetch_add(1);
          return Keys(int64_t{i} * kRowsPerBatch, kRowsPerBatch, modulo);
        });
    if (!made.ok()) return made.status();
    return *made;
  };
  return ac::Declaration("source", ac::SourceNodeOptions(KeySchema(name), generator));
}

ac::Declaration Join(ac::Declaration probe, ac::Declaration build, const std::string& probe_key,
                     const std::string& build_key) {
  EXPECT_TRUE(GateProbeOnBuild(&probe, &build).ok());
  ac::HashJoinNodeOptions options(ac::JoinType::INNER, {arrow::FieldRef(probe_key)},
                                  {arrow::FieldRef(build_key)});
  return ac::Declaration("hashjoin", {std::move(probe), std::move(build)}, std::move(options));
}

// In a chain of joins, the bottom join holds its probe batches until every Bloom filter pushed
// down to it has come, so its probe side waits for the build sides above it too: here the top
// join's build side is slow, and the probe side must not run ahead of it past the gate's bound
// (8 MiB, 128 of these batches), while the result stays whole.
TEST(JoinGateTest, AJoinChainsProbeSideWaitsForEveryBuildSideAboveIt) {
  constexpr int kProbeBatches = 2000;  // 125 MiB if it all queued
  constexpr int64_t kProbeModulo = 100'000;
  constexpr int64_t kUnique = int64_t{1} << 40;
  auto probe_count = std::make_shared<std::atomic<int>>(0);
  auto probe_at_top_build_end = std::make_shared<std::atomic<int>>(-1);
  auto unused = std::make_shared<std::atomic<int>>(0);

  // The probe side is paced so that the batches it makes reach the gate about as fast as it
  // makes them (a source hands each batch on in a task of its own).
  ac::Declaration probe = CountedSource("k", kProbeBatches, kProbeModulo, probe_count, [] {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  });
  // Keys 0 to 8191 once each, and 0 to 819199 once each, behind 500 ms of waits.
  ac::Declaration bottom_build = CountedSource("k1", 1, kUnique, unused);
  ac::Declaration top_build = CountedSource(
      "k2", 100, kUnique, unused, [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); },
      [=] { probe_at_top_build_end->store(probe_count->load()); });

  ac::Declaration bottom = Join(std::move(probe), std::move(bottom_build), "k", "k1");
  ac::Declaration top = Join(std::move(bottom), std::move(top_build), "k", "k2");
  auto table = ac::DeclarationToTable(std::move(top));
  ASSERT_TRUE(table.ok()) << table.status().ToString();

  // Each probe row whose key is below 8192 matches one row of each build side.
  const int64_t probe_rows = int64_t{kProbeBatches} * kRowsPerBatch;
  EXPECT_EQ((*table)->num_rows(), probe_rows / kProbeModulo * kRowsPerBatch +
                                      std::min(probe_rows % kProbeModulo, kRowsPerBatch));
  EXPECT_EQ(probe_count->load(), kProbeBatches);
  // 128 batches pass before the gate pauses the probe side, and a few more are on their way
  // (more on a loaded machine, where the pool runs the tasks that hand them on late). Without
  // the wait, 500 to 1000 of them had been made by then.
  ASSERT_GE(probe_at_top_build_end->load(), 0);
  EXPECT_LE(probe_at_top_build_end->load(), 300);
}

}  // namespace
}  // namespace sluice::exec
