#include "exec/int_key_aggregate.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "exec/kept_rows.h"
#include "plan/compute_init.h"
#include "plan/exact_sum.h"

namespace sluice::exec {
namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// k: `keys` distinct keys of `key_type` in random order, every 13th NULL; v: int64 with every 7th
// NULL; d: decimal128(15, 2).
std::shared_ptr<arrow::Table> Input(int64_t n, int64_t keys,
                                    const std::shared_ptr<arrow::DataType>& key_type,
                                    uint32_t seed) {
  std::mt19937_64 rng(seed);
  arrow::Int64Builder k, v;
  arrow::Decimal128Builder d(arrow::decimal128(15, 2));
  for (int64_t i = 0; i < n; ++i) {
    // Keys spread over the type's range, negative ones included.
    const int64_t key = static_cast<int64_t>(rng() % keys) * 7919 - 50'000;
    EXPECT_TRUE((i % 13 == 12 ? k.AppendNull() : k.Append(key)).ok());
    EXPECT_TRUE((i % 7 == 6 ? v.AppendNull() : v.Append(static_cast<int64_t>(rng() % 1000))).ok());
    EXPECT_TRUE(d.Append(arrow::Decimal128(static_cast<int64_t>(rng() % 100000))).ok());
  }
  // int64 -> int32 -> the key type (Arrow casts to date32 from int32 only).
  auto narrow = cp::Cast(*k.Finish().ValueOrDie(), arrow::int32()).ValueOrDie();
  auto key_array = key_type->id() == arrow::Type::INT64
                       ? cp::Cast(*narrow, arrow::int64()).ValueOrDie()
                       : cp::Cast(*narrow, key_type).ValueOrDie();
  return arrow::Table::Make(
      arrow::schema({arrow::field("k", key_type), arrow::field("v", arrow::int64()),
                     arrow::field("d", arrow::decimal128(15, 2))}),
      {key_array, v.Finish().ValueOrDie(), d.Finish().ValueOrDie()});
}

// Aggregates whose finished values combine (group_combine.h), so that two threads' tables
// finish side by side.
std::vector<cp::Aggregate> CombinableAggregates() {
  auto skip = std::make_shared<cp::ScalarAggregateOptions>(/*skip_nulls=*/true, /*min_count=*/1);
  return {
      {"hash_sum", skip, arrow::FieldRef("v"), "sum_v"},
      {"hash_count", std::make_shared<cp::CountOptions>(cp::CountOptions::ONLY_VALID),
       arrow::FieldRef("v"), "count_v"},
      {"hash_count_all", nullptr, std::vector<arrow::FieldRef>{}, "n"},
      {"hash_min", skip, arrow::FieldRef("v"), "min_v"},
      {"hash_max", skip, arrow::FieldRef("d"), "max_d"},
      {std::string("hash_") + plan::kExactSumFunction, skip, arrow::FieldRef("d"), "sum_d"},
  };
}

// The same with a mean, which does not combine: threads' tables merge key by key.
std::vector<cp::Aggregate> Aggregates() {
  auto aggregates = CombinableAggregates();
  aggregates.emplace_back("hash_mean",
                          std::make_shared<cp::ScalarAggregateOptions>(/*skip_nulls=*/true,
                                                                       /*min_count=*/1),
                          arrow::FieldRef("v"), "mean_v");
  return aggregates;
}

// `table` grouped by k through `factory`, sorted by k (NULL last).
std::shared_ptr<arrow::Table> Grouped(const std::shared_ptr<arrow::Table>& table,
                                      const std::string& factory,
                                      std::vector<cp::Aggregate> aggregates,
                                      std::vector<arrow::FieldRef> keys = {arrow::FieldRef("k")}) {
  const size_t keys_count = keys.size();
  ac::Declaration plan = ac::Declaration::Sequence(
      {{"table_source", ac::TableSourceNodeOptions(table, /*max_batch_size=*/777)},
       {factory, ac::AggregateNodeOptions(std::move(aggregates), std::move(keys))}});
  auto out = ac::DeclarationToTable(std::move(plan), /*use_threads=*/true);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return nullptr;
  if ((*out)->num_rows() == 0) return *out;
  std::vector<cp::SortKey> sort;
  for (size_t i = 0; i < keys_count; ++i) {
    sort.emplace_back(arrow::FieldRef(static_cast<int>(i)), cp::SortOrder::Ascending,
                      cp::NullPlacement::AtEnd);
  }
  auto order = cp::SortIndices(*out, cp::SortOptions(sort)).ValueOrDie();
  return cp::Take(*out, order).ValueOrDie().table()->CombineChunks().ValueOrDie();
}

// The kind of node `factory` makes for grouping `table` by `keys`.
std::string NodeKind(const std::shared_ptr<arrow::Table>& table,
                     const std::vector<arrow::FieldRef>& keys) {
  auto plan = ac::ExecPlan::Make().ValueOrDie();
  ac::Declaration decl = ac::Declaration::Sequence(
      {{"table_source", ac::TableSourceNodeOptions(table)},
       {kIntKeyAggregateFactory, ac::AggregateNodeOptions(Aggregates(), keys)}});
  auto node = decl.AddToPlan(plan.get());
  EXPECT_TRUE(node.ok()) << node.status().ToString();
  return node.ok() ? (*node)->kind_name() : "";
}

class IntKeyAggregate : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
    ASSERT_TRUE(RegisterIntKeyAggregate().ok());
  }
};

TEST_F(IntKeyAggregate, GivesWhatArrowsAggregateGives) {
  for (const auto& type : {arrow::int64(), arrow::int32(), arrow::date32()}) {
    // Few groups; more groups than batches' rows (the table grows many times, and threads'
    // tables merge); no rows.
    for (const auto& [rows, keys] :
         {std::pair<int64_t, int64_t>{20'000, 5}, {60'000, 40'000}, {0, 1}}) {
      auto table = Input(rows, keys, type, 11);
      auto want = Grouped(table, "aggregate", Aggregates());
      auto got = Grouped(table, kIntKeyAggregateFactory, Aggregates());
      ASSERT_NE(want, nullptr);
      ASSERT_NE(got, nullptr);
      EXPECT_TRUE(got->schema()->Equals(*want->schema())) << got->schema()->ToString();
      EXPECT_EQ(got->num_rows(), want->num_rows()) << type->ToString() << " " << rows;
      EXPECT_TRUE(got->Equals(*want)) << type->ToString() << " " << rows;
    }
  }
}

// Sorted keys in runs of 1 to 7 equal rows, as lineitem holds its order keys: the run reuse
// (across batch boundaries too) and the table's runs of near slots. `key_of(i)` is the i-th key.
std::shared_ptr<arrow::Table> Clustered(int64_t keys, const std::function<int64_t(int64_t)>& key_of,
                                        uint32_t seed) {
  std::mt19937_64 rng(seed);
  arrow::Int64Builder k, v;
  arrow::Decimal128Builder d(arrow::decimal128(15, 2));
  for (int64_t i = 0; i < keys; ++i) {
    for (uint64_t r = 0, run = 1 + rng() % 7; r < run; ++r) {
      EXPECT_TRUE(k.Append(key_of(i)).ok());
      EXPECT_TRUE(v.Append(static_cast<int64_t>(rng() % 1000)).ok());
      EXPECT_TRUE(d.Append(arrow::Decimal128(static_cast<int64_t>(rng() % 100000))).ok());
    }
  }
  return arrow::Table::Make(
      arrow::schema({arrow::field("k", arrow::int64()), arrow::field("v", arrow::int64()),
                     arrow::field("d", arrow::decimal128(15, 2))}),
      {k.Finish().ValueOrDie(), v.Finish().ValueOrDie(), d.Finish().ValueOrDie()});
}

TEST_F(IntKeyAggregate, SortedRunsAndStridedKeys) {
  const std::vector<std::pair<std::string, std::function<int64_t(int64_t)>>> patterns = {
      {"dense", [](int64_t i) { return i; }},
      // 8 keys of every 32, as TPC-H's order keys are.
      {"order keys", [](int64_t i) { return (i / 8) * 32 + i % 8 + 1; }},
      // Every key in the same low bits: all in one slot of each run of slots.
      {"stride 8", [](int64_t i) { return i * 8; }},
      {"stride 2^20", [](int64_t i) { return (i - 20'000) * (int64_t{1} << 20); }},
      // Keys past int32 whose low 32 bits are those of keys already in the table (whose slots
      // hold only those bits until the first such key arrives), and negative keys beside their
      // unsigned twins.
      {"past int32, after keys in it",
       [](int64_t i) { return i < 25'000 ? i : (i - 25'000) + (int64_t{1} << 32); }},
      {"negative and unsigned twins",
       [](int64_t i) { return i % 2 == 0 ? -(i / 2) - 1 : (int64_t{1} << 32) - (i / 2) - 1; }},
  };
  for (const auto& [name, key_of] : patterns) {
    auto table = Clustered(50'000, key_of, 5);
    auto want = Grouped(table, "aggregate", Aggregates());
    auto got = Grouped(table, kIntKeyAggregateFactory, Aggregates());
    ASSERT_NE(want, nullptr);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->num_rows(), 50'000) << name;
    EXPECT_TRUE(got->Equals(*want)) << name;
  }
}

// Enough groups that each thread's table, and the merged one, are on huge pages (from 2 MiB:
// exec/huge_page_allocator.h), in keys as TPC-H's order keys.
TEST_F(IntKeyAggregate, TablesLargeEnoughForHugePages) {
  auto table = Clustered(
      300'000, [](int64_t i) { return (i / 8) * 32 + i % 8 + 1; }, 9);
  auto want = Grouped(table, "aggregate", Aggregates());
  auto got = Grouped(table, kIntKeyAggregateFactory, Aggregates());
  ASSERT_NE(want, nullptr);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->num_rows(), 300'000);
  EXPECT_TRUE(got->Equals(*want));
}

// Both threads' tables large enough to finish side by side: keys in random order (most groups
// in both tables: they are filtered out of each and combined) and in sorted runs (201 groups in
// both: the larger table, ~600 rows between two of them, passes in slices between them; the
// smaller, ~150, is filtered, since slices that short would make as many short batches), and
// pairs of keys; NULL keys and values.
TEST_F(IntKeyAggregate, ThreadsTablesFinishedSideBySideGiveWhatArrowsAggregateGives) {
  const std::vector<std::pair<std::string, std::shared_ptr<arrow::Table>>> tables = {
      {"random", Input(400'000, 150'000, arrow::int64(), 31)},
      {"runs", Clustered(
                   150'000, [](int64_t i) { return (i / 8) * 32 + i % 8 + 1; }, 37)},
  };
  for (const auto& [name, table] : tables) {
    auto want = Grouped(table, "aggregate", CombinableAggregates());
    auto got = Grouped(table, kIntKeyAggregateFactory, CombinableAggregates());
    ASSERT_NE(want, nullptr);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->num_rows(), want->num_rows()) << name;
    EXPECT_TRUE(got->Equals(*want)) << name;
  }
}

// Two 32-bit keys a and b (b of `b_type`) with `a_keys` x `b_keys` pairs in random order, the
// types' extremes among them, a NULL in every 11th a and 13th b (and so both in some rows).
std::shared_ptr<arrow::Table> Pairs(int64_t n, int64_t a_keys, int64_t b_keys,
                                    const std::shared_ptr<arrow::DataType>& b_type, uint32_t seed) {
  std::mt19937_64 rng(seed);
  auto value = [&](int64_t keys) -> int32_t {
    const int64_t r = static_cast<int64_t>(rng() % (keys + 2));
    if (r == keys) return std::numeric_limits<int32_t>::min();
    if (r == keys + 1) return std::numeric_limits<int32_t>::max();
    return static_cast<int32_t>(r * 7919 - 50'000);  // negative ones too
  };
  arrow::Int32Builder a, b;
  arrow::Int64Builder v;
  arrow::Decimal128Builder d(arrow::decimal128(15, 2));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE((i % 11 == 10 ? a.AppendNull() : a.Append(value(a_keys))).ok());
    EXPECT_TRUE((i % 13 == 12 ? b.AppendNull() : b.Append(value(b_keys))).ok());
    EXPECT_TRUE(v.Append(static_cast<int64_t>(rng() % 1000)).ok());
    EXPECT_TRUE(d.Append(arrow::Decimal128(static_cast<int64_t>(rng() % 100000))).ok());
  }
  auto b_array = cp::Cast(*b.Finish().ValueOrDie(), b_type).ValueOrDie();
  return arrow::Table::Make(
      arrow::schema({arrow::field("a", arrow::int32()), arrow::field("b", b_type),
                     arrow::field("v", arrow::int64()),
                     arrow::field("d", arrow::decimal128(15, 2))}),
      {a.Finish().ValueOrDie(), b_array, v.Finish().ValueOrDie(), d.Finish().ValueOrDie()});
}

TEST_F(IntKeyAggregate, PairsOfKeysGiveWhatArrowsAggregateGives) {
  const std::vector<arrow::FieldRef> keys = {arrow::FieldRef("a"), arrow::FieldRef("b")};
  EXPECT_EQ(NodeKind(Pairs(10, 3, 2, arrow::date32(), 1), keys), "IntKeyAggregateNode");
  for (const auto& type : {arrow::int32(), arrow::date32()}) {
    // Few pairs (Q1's four flags); many (the tables grow and threads' tables merge); none.
    for (const auto& [rows, a_keys, b_keys] :
         {std::tuple<int64_t, int64_t, int64_t>{20'000, 3, 2}, {60'000, 300, 200}, {0, 1, 1}}) {
      auto table = Pairs(rows, a_keys, b_keys, type, 17);
      auto want = Grouped(table, "aggregate", Aggregates(), keys);
      auto got = Grouped(table, kIntKeyAggregateFactory, Aggregates(), keys);
      ASSERT_NE(want, nullptr);
      ASSERT_NE(got, nullptr);
      EXPECT_TRUE(got->schema()->Equals(*want->schema())) << got->schema()->ToString();
      EXPECT_EQ(got->num_rows(), want->num_rows()) << type->ToString() << " " << rows;
      EXPECT_TRUE(got->Equals(*want)) << type->ToString() << " " << rows;
    }
  }
  // Many pairs with aggregates that combine: the two threads' tables finish side by side.
  auto many = Pairs(400'000, 600, 300, arrow::int32(), 19);
  auto many_want = Grouped(many, "aggregate", CombinableAggregates(), keys);
  auto many_got = Grouped(many, kIntKeyAggregateFactory, CombinableAggregates(), keys);
  ASSERT_NE(many_got, nullptr);
  EXPECT_TRUE(many_got->Equals(*many_want));
  // The same rows with one key swapped for the other: the pair's halves stay apart.
  auto table = Pairs(20'000, 3, 2, arrow::int32(), 23);
  const std::vector<arrow::FieldRef> swapped = {arrow::FieldRef("b"), arrow::FieldRef("a")};
  auto want = Grouped(table, "aggregate", Aggregates(), swapped);
  auto got = Grouped(table, kIntKeyAggregateFactory, Aggregates(), swapped);
  ASSERT_NE(got, nullptr);
  EXPECT_TRUE(got->Equals(*want));
}

// `table` with a kKeptRowsColumn that keeps about nine rows in ten, and `table` without the rows
// it drops.
std::pair<std::shared_ptr<arrow::Table>, std::shared_ptr<arrow::Table>> Marked(
    const std::shared_ptr<arrow::Table>& table, uint32_t seed) {
  std::mt19937_64 rng(seed);
  arrow::BooleanBuilder kept;
  for (int64_t i = 0; i < table->num_rows(); ++i) EXPECT_TRUE(kept.Append(rng() % 10 != 0).ok());
  auto mask = kept.Finish().ValueOrDie();
  auto marked =
      table
          ->AddColumn(table->num_columns(), arrow::field(kKeptRowsColumn, arrow::boolean(), false),
                      std::make_shared<arrow::ChunkedArray>(mask))
          .ValueOrDie();
  auto filtered = cp::Filter(table, mask).ValueOrDie().table();
  return {marked, filtered};
}

// Rows a filter marked as dropped (exec/kept_rows.h) are in no group, and no group is made for a
// key that only they hold: few groups, many (threads' tables merged key by key, and finished
// side by side), pairs of keys, and a key that Arrow's node groups after dropping them.
TEST_F(IntKeyAggregate, RowsMarkedAsDroppedAreLeftOut) {
  struct Case {
    std::string name;
    std::shared_ptr<arrow::Table> table;
    std::vector<cp::Aggregate> aggregates;
    std::vector<arrow::FieldRef> keys;
  };
  const std::vector<arrow::FieldRef> k = {arrow::FieldRef("k")};
  const std::vector<arrow::FieldRef> ab = {arrow::FieldRef("a"), arrow::FieldRef("b")};
  const std::vector<Case> cases = {
      {"few", Input(20'000, 5, arrow::int64(), 41), Aggregates(), k},
      {"merged", Input(60'000, 40'000, arrow::int32(), 43), Aggregates(), k},
      {"side by side", Input(400'000, 150'000, arrow::int64(), 47), CombinableAggregates(), k},
      {"pairs", Pairs(60'000, 300, 200, arrow::date32(), 53), Aggregates(), ab},
      {"pairs side by side", Pairs(400'000, 600, 300, arrow::int32(), 59), CombinableAggregates(),
       ab},
      {"to Arrow's node",
       Input(5'000, 50, arrow::int64(), 61),
       Aggregates(),
       {arrow::FieldRef("k"), arrow::FieldRef("v")}},
  };
  for (const auto& c : cases) {
    auto [marked, filtered] = Marked(c.table, 67);
    auto want = Grouped(filtered, "aggregate", c.aggregates, c.keys);
    auto got = Grouped(marked, kIntKeyAggregateFactory, c.aggregates, c.keys);
    ASSERT_NE(want, nullptr) << c.name;
    ASSERT_NE(got, nullptr) << c.name;
    EXPECT_EQ(got->num_rows(), want->num_rows()) << c.name;
    EXPECT_TRUE(got->Equals(*want)) << c.name;
  }
}

// The combining step above a partial one (what eager aggregation's grouping below a join
// feeds): `partial` grouped again by `keys` with sum of counts and sums, and min of mins and
// max of maxes, named as CombinableAggregates names them.
std::shared_ptr<arrow::Table> Combined(const std::shared_ptr<arrow::Table>& partial,
                                       std::vector<arrow::FieldRef> keys) {
  auto skip = std::make_shared<cp::ScalarAggregateOptions>(/*skip_nulls=*/true, /*min_count=*/1);
  std::vector<cp::Aggregate> combine = {
      {"hash_sum", skip, arrow::FieldRef("sum_v"), "sum_v"},
      {"hash_sum", skip, arrow::FieldRef("count_v"), "count_v"},
      {"hash_sum", skip, arrow::FieldRef("n"), "n"},
      {"hash_min", skip, arrow::FieldRef("min_v"), "min_v"},
      {"hash_max", skip, arrow::FieldRef("max_d"), "max_d"},
      {std::string("hash_") + plan::kExactSumFunction, skip, arrow::FieldRef("sum_d"), "sum_d"},
  };
  return Grouped(partial, "aggregate", std::move(combine), std::move(keys));
}

// A partial step that passes rows through where grouping does not shrink them: with keys nearly
// all distinct (one key and pairs), each thread passes its rows once it has seen kPassCheckRows,
// so keys repeat in the output, and the combining step above gives what grouping at once gives,
// NULL keys and values included. With few keys nothing passes and each key is one row.
TEST_F(IntKeyAggregate, PartialStepPassesRowsWhereGroupingDoesNotShrinkThem) {
  struct Case {
    std::string name;
    std::shared_ptr<arrow::Table> table;
    std::vector<arrow::FieldRef> keys;
    bool passes;
  };
  const std::vector<arrow::FieldRef> k = {arrow::FieldRef("k")};
  const std::vector<arrow::FieldRef> ab = {arrow::FieldRef("a"), arrow::FieldRef("b")};
  const int64_t rows = 4 * kPassCheckRows;
  const std::vector<Case> cases = {
      {"distinct keys", Input(rows, 250'000, arrow::int64(), 71), k, true},
      {"distinct pairs", Pairs(rows, 5'000, 5'000, arrow::date32(), 73), ab, true},
      {"few keys", Input(rows, 1'000, arrow::int32(), 79), k, false},
  };
  for (const auto& c : cases) {
    auto want = Grouped(c.table, "aggregate", CombinableAggregates(), c.keys);
    auto partial = Grouped(c.table, kPartialIntKeyAggregateFactory, CombinableAggregates(), c.keys);
    ASSERT_NE(want, nullptr) << c.name;
    ASSERT_NE(partial, nullptr) << c.name;
    EXPECT_TRUE(partial->schema()->Equals(*want->schema())) << c.name;
    if (c.passes) {
      EXPECT_GT(partial->num_rows(), want->num_rows()) << c.name;
    } else {
      EXPECT_EQ(partial->num_rows(), want->num_rows()) << c.name;
    }
    auto got = Combined(partial, c.keys);
    ASSERT_NE(got, nullptr) << c.name;
    EXPECT_EQ(got->num_rows(), want->num_rows()) << c.name;
    EXPECT_TRUE(got->Equals(*want)) << c.name;
  }
  // Rows a filter marked as dropped never pass: the node groups them all.
  auto [marked, filtered] = Marked(Input(rows, 250'000, arrow::int64(), 83), 89);
  auto want = Grouped(filtered, "aggregate", CombinableAggregates(), k);
  auto got = Grouped(marked, kPartialIntKeyAggregateFactory, CombinableAggregates(), k);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->num_rows(), want->num_rows());
  EXPECT_TRUE(got->Equals(*want));
}

TEST_F(IntKeyAggregate, OtherKeysGoToArrowsAggregate) {
  auto table = Input(5'000, 50, arrow::int64(), 3);
  // Two keys one of which is 64-bit, a string key: the same result as Arrow's node, made by it.
  auto strings =
      table
          ->AddColumn(3, arrow::field("s", arrow::utf8()),
                      std::make_shared<arrow::ChunkedArray>(
                          cp::Cast(*table->column(0)->chunk(0), arrow::utf8()).ValueOrDie()))
          .ValueOrDie();
  for (const auto& keys : std::vector<std::vector<arrow::FieldRef>>{
           {arrow::FieldRef("k"), arrow::FieldRef("v")}, {arrow::FieldRef("s")}}) {
    auto want = Grouped(strings, "aggregate", Aggregates(), keys);
    auto got = Grouped(strings, kIntKeyAggregateFactory, Aggregates(), keys);
    ASSERT_NE(got, nullptr);
    EXPECT_TRUE(got->Equals(*want));
    EXPECT_EQ(NodeKind(strings, keys), "GroupByNode");
  }
}

}  // namespace
}  // namespace sluice::exec
