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
constexpr std::chrono::milliseconds kBuildDelay{100};

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
                     const std::string& build_key, bool filter_probe = true) {
  ac::HashJoinNodeOptions options(ac::JoinType::INNER, {arrow::FieldRef(probe_key)},
                                  {arrow::FieldRef(build_key)});
  EXPECT_TRUE(GateProbeOnBuild(&probe, &build, options, filter_probe).ok());
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

// The rows of the gated probe side and of the build side, run as one plan without the join: what
// the join would be given.
struct Sides {
  std::shared_ptr<arrow::Table> probe;
  std::shared_ptr<arrow::Table> build;
};

Sides RunGatedSides(ac::Declaration probe, ac::Declaration build,
                    const ac::HashJoinNodeOptions& options, bool filter_probe) {
  EXPECT_TRUE(GateProbeOnBuild(&probe, &build, options, filter_probe).ok());
  Sides sides;
  auto plan = ac::ExecPlan::Make().ValueOrDie();
  EXPECT_TRUE(ac::Declaration::Sequence(
                  {std::move(probe), {"table_sink", ac::TableSinkNodeOptions(&sides.probe)}})
                  .AddToPlan(plan.get())
                  .ok());
  EXPECT_TRUE(ac::Declaration::Sequence(
                  {std::move(build), {"table_sink", ac::TableSinkNodeOptions(&sides.build)}})
                  .AddToPlan(plan.get())
                  .ok());
  plan->StartProducing();
  EXPECT_TRUE(plan->finished().status().ok()) << plan->finished().status().ToString();
  return sides;
}

// The rows of `table` (one int64 column) whose key is below `limit`.
int64_t RowsBelow(const arrow::Table& table, int64_t limit) {
  int64_t rows = 0;
  for (const auto& chunk : table.column(0)->chunks()) {
    const auto& keys = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t i = 0; i < keys.length(); ++i) rows += keys.IsValid(i) && keys.Value(i) < limit;
  }
  return rows;
}

// A build side of one batch of `keys`, delivered after `delay`.
ac::Declaration SlowBuild(const std::string& name, std::shared_ptr<arrow::Array> keys,
                          std::chrono::milliseconds delay) {
  cp::ExecBatch batch({keys}, keys->length());
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::function<arrow::Future<std::optional<cp::ExecBatch>>()> generator =
      [=]() -> arrow::Future<std::optional<cp::ExecBatch>> {
    if (done->exchange(true)) {
      return arrow::Future<std::optional<cp::ExecBatch>>::MakeFinished(std::nullopt);
    }
    auto made = arrow::io::default_io_context().executor()->Submit(
        [=]() -> arrow::Result<std::optional<cp::ExecBatch>> {
          std::this_thread::sleep_for(delay);
          return batch;
        });
    if (!made.ok()) return made.status();
    return *made;
  };
  return ac::Declaration("source", ac::SourceNodeOptions(KeySchema(name), generator));
}

std::shared_ptr<arrow::Array> KeyArray(const std::vector<std::optional<int64_t>>& keys) {
  arrow::Int64Builder builder;
  for (const auto& k : keys) EXPECT_TRUE((k ? builder.Append(*k) : builder.AppendNull()).ok());
  return builder.Finish().ValueOrDie();
}

std::shared_ptr<arrow::Array> Range(int64_t first, int64_t count, int64_t step = 1) {
  std::vector<std::optional<int64_t>> keys;
  for (int64_t i = 0; i < count; ++i) keys.push_back(first + i * step);
  return KeyArray(keys);
}

constexpr int kFilterProbeBatches = 1000;  // 8.2M rows, keys 0 to 99999 over and over
constexpr int64_t kFilterProbeModulo = 100'000;

ac::Declaration FilterProbe() {
  return CountedSource("k", kFilterProbeBatches, kFilterProbeModulo,
                       std::make_shared<std::atomic<int>>(0));
}

// Once the build side has ended, the probe rows whose key it lacks are dropped before the join,
// and none whose key it has: of 8.2M probe rows, 8 % match, and the first 8 MiB pass before the
// gate opens.
TEST(JoinGateTest, AnInnerJoinsProbeSideKeepsOnlyTheKeysOfItsBuildSide) {
  ac::HashJoinNodeOptions options(ac::JoinType::INNER, {arrow::FieldRef("k")},
                                  {arrow::FieldRef("b")});
  // Keys 0 to 7999, a NULL, and a key no probe row has.
  std::vector<std::optional<int64_t>> keys;
  for (int64_t k = 0; k < 8000; ++k) keys.push_back(k);
  keys.push_back(std::nullopt);
  keys.push_back(int64_t{5'000'000});
  Sides sides = RunGatedSides(FilterProbe(), SlowBuild("b", KeyArray(keys), kBuildDelay), options,
                              /*filter_probe=*/true);
  const int64_t all = int64_t{kFilterProbeBatches} * kRowsPerBatch;
  const int64_t matching = RowsBelow(*sides.probe, 8000);
  EXPECT_EQ(matching,
            all / kFilterProbeModulo * 8000 + std::min<int64_t>(all % kFilterProbeModulo, 8000));
  // The unfiltered rows are at most the gate's 8 MiB (1M rows) and the batches in flight.
  EXPECT_LT(sides.probe->num_rows() - matching, all / 4) << sides.probe->num_rows();
  EXPECT_EQ(sides.build->num_rows(), 8002);

  // Without the filter, or for a join that keeps unmatched probe rows, every row passes.
  for (const auto& [type, filter] :
       {std::pair{ac::JoinType::INNER, false}, std::pair{ac::JoinType::LEFT_OUTER, true},
        std::pair{ac::JoinType::LEFT_ANTI, true}}) {
    ac::HashJoinNodeOptions other(type, {arrow::FieldRef("k")}, {arrow::FieldRef("b")});
    Sides whole =
        RunGatedSides(FilterProbe(), SlowBuild("b", KeyArray(keys), kBuildDelay), other, filter);
    EXPECT_EQ(whole.probe->num_rows(), all) << ac::ToString(type) << " " << filter;
  }
}

// A build side without a key that is not NULL matches no probe row; one whose keys are too far
// apart for a bitmap filters none (Acero's Bloom filter still does).
TEST(JoinGateTest, AnEmptyBuildSideDropsEveryProbeRowAndASparseOneNone) {
  ac::HashJoinNodeOptions options(ac::JoinType::INNER, {arrow::FieldRef("k")},
                                  {arrow::FieldRef("b")});
  const int64_t all = int64_t{kFilterProbeBatches} * kRowsPerBatch;
  Sides nulls = RunGatedSides(FilterProbe(),
                              SlowBuild("b", KeyArray({std::nullopt, std::nullopt}), kBuildDelay),
                              options, true);
  EXPECT_LT(nulls.probe->num_rows(), all / 4);
  Sides sparse = RunGatedSides(
      FilterProbe(), SlowBuild("b", Range(0, 1000, int64_t{1} << 30), kBuildDelay), options, true);
  EXPECT_EQ(sparse.probe->num_rows(), all);
}

// A key set that drops few rows stops filtering, and loses none of them.
TEST(JoinGateTest, AKeySetThatDropsFewRowsStopsFiltering) {
  ac::HashJoinNodeOptions options(ac::JoinType::INNER, {arrow::FieldRef("k")},
                                  {arrow::FieldRef("b")});
  const int64_t all = int64_t{kFilterProbeBatches} * kRowsPerBatch;
  // Every probe key but 99999: one row in 100000 is dropped while it filters.
  Sides sides =
      RunGatedSides(FilterProbe(), SlowBuild("b", Range(0, 99'999), kBuildDelay), options, true);
  const int64_t kept = RowsBelow(*sides.probe, 99'999);
  EXPECT_EQ(kept, all - all / kFilterProbeModulo);
  // It judged after 256K rows and stopped: nearly every row of key 99999 passed.
  EXPECT_GT(sides.probe->num_rows() - kept, all / kFilterProbeModulo - 10);
}

}  // namespace
}  // namespace sluice::exec
