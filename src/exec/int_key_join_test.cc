#include "exec/int_key_join.h"

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "plan/compute_init.h"

// GCC 12 reports a false maybe-uninitialized inside FieldRef's std::variant copy (the sort keys
// below), wherever it inlines them.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace sluice::exec {
namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// `rows` rows of (key of `type`, value int64, text string): keys in [0, distinct), NULL where
// rng says so with `null_share`; values and texts vary per row.
std::shared_ptr<arrow::Table> Side(const std::string& prefix,
                                   const std::shared_ptr<arrow::DataType>& type, int64_t rows,
                                   int64_t distinct, double null_share, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> key(0, distinct - 1);
  std::bernoulli_distribution null(null_share);
  arrow::Int64Builder keys64, values;
  arrow::Int32Builder keys32;
  arrow::StringBuilder texts;
  for (int64_t i = 0; i < rows; ++i) {
    const bool is_null = null(rng);
    const int64_t k = key(rng);
    if (type->id() == arrow::Type::INT64) {
      EXPECT_TRUE((is_null ? keys64.AppendNull() : keys64.Append(k * 1'000'003)).ok());
    } else {
      EXPECT_TRUE((is_null ? keys32.AppendNull() : keys32.Append(static_cast<int32_t>(k))).ok());
    }
    EXPECT_TRUE(values.Append(i).ok());
    EXPECT_TRUE((i % 7 == 0 ? texts.AppendNull() : texts.Append(prefix + std::to_string(i))).ok());
  }
  std::shared_ptr<arrow::Array> key_array;
  if (type->id() == arrow::Type::INT64) {
    key_array = keys64.Finish().ValueOrDie();
  } else {
    key_array = keys32.Finish().ValueOrDie()->View(type).ValueOrDie();
  }
  return arrow::Table::Make(arrow::schema({arrow::field(prefix + "_key", type),
                                           arrow::field(prefix + "_value", arrow::int64()),
                                           arrow::field(prefix + "_text", arrow::utf8())}),
                            {key_array, values.Finish().ValueOrDie(), texts.Finish().ValueOrDie()});
}

ac::Declaration Source(std::shared_ptr<arrow::Table> table, int64_t batch_rows) {
  return ac::Declaration("table_source", ac::TableSourceNodeOptions(std::move(table), batch_rows));
}

// `table`'s rows in one order: sorted by every column.
std::shared_ptr<arrow::Table> Sorted(const std::shared_ptr<arrow::Table>& table) {
  std::vector<cp::SortKey> keys;
  for (const auto& f : table->schema()->fields()) keys.emplace_back(arrow::FieldRef(f->name()));
  auto indices = cp::SortIndices(arrow::Datum(table), cp::SortOptions(keys)).ValueOrDie();
  auto sorted = cp::Take(table, indices).ValueOrDie().table();
  return sorted->CombineChunks().ValueOrDie();
}

struct Joined {
  std::shared_ptr<arrow::Table> table;
  std::string plan;  // the plan's text, to see which node ran
};

Joined RunJoin(const std::string& factory, const std::shared_ptr<arrow::Table>& probe,
               const std::shared_ptr<arrow::Table>& build, const ac::HashJoinNodeOptions& options,
               int64_t batch_rows = 1000) {
  EXPECT_TRUE(plan::EnsureComputeInitialized().ok());
  EXPECT_TRUE(RegisterIntKeyJoin().ok());
  ac::Declaration join(factory, {Source(probe, batch_rows), Source(build, batch_rows)}, options);
  auto plan = ac::ExecPlan::Make().ValueOrDie();
  EXPECT_TRUE(join.AddToPlan(plan.get()).ok());
  Joined out;
  out.plan = plan->ToString();
  auto table = ac::DeclarationToTable(std::move(join), /*use_threads=*/true);
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  if (table.ok()) out.table = Sorted(*table);
  return out;
}

// Ours against Acero's on the same inputs: the same rows, and ours ran.
void ExpectSameAsAcero(const std::shared_ptr<arrow::Table>& probe,
                       const std::shared_ptr<arrow::Table>& build,
                       const ac::HashJoinNodeOptions& options, int64_t batch_rows = 1000) {
  Joined ours = RunJoin(kIntKeyJoinFactory, probe, build, options, batch_rows);
  Joined acero = RunJoin("hashjoin", probe, build, options, batch_rows);
  EXPECT_NE(ours.plan.find("IntKeyJoinNode"), std::string::npos) << ours.plan;
  ASSERT_NE(ours.table, nullptr);
  ASSERT_NE(acero.table, nullptr);
  EXPECT_GT(acero.table->num_rows(), 0);
  EXPECT_TRUE(ours.table->schema()->Equals(*acero.table->schema()))
      << ours.table->schema()->ToString() << "\nvs\n"
      << acero.table->schema()->ToString();
  EXPECT_EQ(ours.table->num_rows(), acero.table->num_rows());
  EXPECT_TRUE(ours.table->Equals(*acero.table));
}

ac::HashJoinNodeOptions AllColumns(const std::string& probe_key, const std::string& build_key) {
  return ac::HashJoinNodeOptions(ac::JoinType::INNER, {arrow::FieldRef(probe_key)},
                                 {arrow::FieldRef(build_key)});
}

TEST(IntKeyJoinTest, RepeatedAndNullKeysOnBothSidesMatchAcero) {
  auto probe = Side("p", arrow::int64(), 20'000, 3'000, 0.05, 1);
  auto build = Side("b", arrow::int64(), 9'000, 3'000, 0.05, 2);
  ExpectSameAsAcero(probe, build, AllColumns("p_key", "b_key"));
}

TEST(IntKeyJoinTest, Int32AndDate32KeysMatchAcero) {
  for (const auto& type : {arrow::int32(), arrow::date32()}) {
    SCOPED_TRACE(type->ToString());
    auto probe = Side("p", type, 15'000, 5'000, 0.02, 3);
    auto build = Side("b", type, 4'000, 8'000, 0.02, 4);
    ExpectSameAsAcero(probe, build, AllColumns("p_key", "b_key"));
  }
}

TEST(IntKeyJoinTest, ChosenOutputColumnsInTheirOrder) {
  auto probe = Side("p", arrow::int64(), 10'000, 2'000, 0.01, 5);
  auto build = Side("b", arrow::int64(), 3'000, 2'000, 0.01, 6);
  ac::HashJoinNodeOptions options(
      ac::JoinType::INNER, {arrow::FieldRef("p_key")}, {arrow::FieldRef("b_key")},
      {arrow::FieldRef("p_text"), arrow::FieldRef("p_value")}, {arrow::FieldRef("b_text")});
  ExpectSameAsAcero(probe, build, options);
  // The probe side only, as a join under a count(*) outputs.
  ac::HashJoinNodeOptions probe_only(ac::JoinType::INNER, {arrow::FieldRef("p_key")},
                                     {arrow::FieldRef("b_key")}, {arrow::FieldRef("p_value")}, {});
  ExpectSameAsAcero(probe, build, probe_only);
}

// A hashed side of unique keys that every probe row finds once: probe batches pass on as they
// are (some batches also miss, and take their rows).
TEST(IntKeyJoinTest, ProbeRowsThatEachFindOneRow) {
  auto build = Side("b", arrow::int64(), 0, 1, 0, 7);
  arrow::Int64Builder keys, values;
  for (int64_t k = 0; k < 50'000; ++k) {
    ASSERT_TRUE(keys.Append(k * 1'000'003).ok());
    ASSERT_TRUE(values.Append(-k).ok());
  }
  build = arrow::Table::Make(arrow::schema({arrow::field("b_key", arrow::int64()),
                                            arrow::field("b_value", arrow::int64())}),
                             {keys.Finish().ValueOrDie(), values.Finish().ValueOrDie()});
  auto probe = Side("p", arrow::int64(), 30'000, 50'000, 0, 8);
  ExpectSameAsAcero(probe, build, AllColumns("p_key", "b_key"));
  auto some_miss = Side("p", arrow::int64(), 30'000, 60'000, 0.01, 9);
  ExpectSameAsAcero(some_miss, build, AllColumns("p_key", "b_key"));
}

// Probe keys in ascending runs (as lineitem's order keys), over a hashed side of every other
// key: a row whose key equals the row before's reuses its lookup, and one next to it must not.
TEST(IntKeyJoinTest, ProbeKeysInRuns) {
  arrow::Int64Builder build_keys, build_values;
  for (int64_t k = 0; k < 40'000; k += 2) {
    ASSERT_TRUE(build_keys.Append(k).ok());
    ASSERT_TRUE(build_values.Append(k * 10).ok());
  }
  auto build =
      arrow::Table::Make(arrow::schema({arrow::field("b_key", arrow::int64()),
                                        arrow::field("b_value", arrow::int64())}),
                         {build_keys.Finish().ValueOrDie(), build_values.Finish().ValueOrDie()});
  arrow::Int64Builder probe_keys, probe_values;
  int64_t row = 0;
  for (int64_t k = 0; k < 30'000; ++k) {
    for (int64_t r = 0; r < 1 + (k * 7) % 4; ++r, ++row) {
      ASSERT_TRUE((row % 101 == 0 ? probe_keys.AppendNull() : probe_keys.Append(k)).ok());
      ASSERT_TRUE(probe_values.Append(row).ok());
    }
  }
  auto probe =
      arrow::Table::Make(arrow::schema({arrow::field("p_key", arrow::int64()),
                                        arrow::field("p_value", arrow::int64())}),
                         {probe_keys.Finish().ValueOrDie(), probe_values.Finish().ValueOrDie()});
  ExpectSameAsAcero(probe, build, AllColumns("p_key", "b_key"));
}

// One key repeated 100K times on the hashed side: a probe batch's output is cut into batches.
TEST(IntKeyJoinTest, AKeyThatRepeatsManyTimes) {
  auto probe = Side("p", arrow::int32(), 6, 2, 0, 10);
  auto build = Side("b", arrow::int32(), 100'000, 2, 0.1, 11);
  ExpectSameAsAcero(probe, build, AllColumns("p_key", "b_key"), 64 * 1024);
}

TEST(IntKeyJoinTest, AnEmptySideJoinsNothing) {
  auto rows = Side("p", arrow::int64(), 5'000, 100, 0, 12);
  auto none = Side("b", arrow::int64(), 0, 1, 0, 13);
  Joined empty_build = RunJoin(kIntKeyJoinFactory, rows, none, AllColumns("p_key", "b_key"));
  ASSERT_NE(empty_build.table, nullptr);
  EXPECT_EQ(empty_build.table->num_rows(), 0);
  EXPECT_EQ(empty_build.table->num_columns(), 6);
  auto no_probe = Side("p", arrow::int64(), 0, 1, 0, 14);
  auto build = Side("b", arrow::int64(), 5'000, 100, 0, 15);
  Joined empty_probe = RunJoin(kIntKeyJoinFactory, no_probe, build, AllColumns("p_key", "b_key"));
  ASSERT_NE(empty_probe.table, nullptr);
  EXPECT_EQ(empty_probe.table->num_rows(), 0);
}

// Where it does not apply, Acero's join runs, with Acero's result.
TEST(IntKeyJoinTest, OtherJoinsFallBackToAcero) {
  auto probe = Side("p", arrow::int64(), 3'000, 500, 0.05, 16);
  auto build64 = Side("b", arrow::int64(), 1'000, 500, 0.05, 17);
  auto build32 = Side("b", arrow::int32(), 1'000, 500, 0.05, 18);
  ac::HashJoinNodeOptions left(ac::JoinType::LEFT_OUTER, {arrow::FieldRef("p_key")},
                               {arrow::FieldRef("b_key")});
  ac::HashJoinNodeOptions filtered = AllColumns("p_key", "b_key");
  filtered.filter = cp::greater(cp::field_ref("p_value"), cp::field_ref("b_value"));
  ac::HashJoinNodeOptions null_equal = AllColumns("p_key", "b_key");
  null_equal.key_cmp = {ac::JoinKeyCmp::IS};
  ac::HashJoinNodeOptions strings = AllColumns("p_text", "b_text");
  const std::vector<std::pair<std::shared_ptr<arrow::Table>, ac::HashJoinNodeOptions>> cases = {
      {build64, left},
      {build64, filtered},
      {build64, null_equal},
      {build64, strings},
      {build32, AllColumns("p_key", "b_key")}};  // int64 against int32
  // A dictionary column whose two batches have different dictionaries.
  auto dictionary = [](std::vector<std::string> words) {
    arrow::StringDictionaryBuilder builder;
    for (const auto& w : words) EXPECT_TRUE(builder.Append(w).ok());
    return builder.Finish().ValueOrDie();
  };
  arrow::Int64Builder dict_keys;
  ASSERT_TRUE(dict_keys.AppendValues({1, 2, 3, 4}).ok());
  auto keys = dict_keys.Finish().ValueOrDie();
  auto dict_type = arrow::dictionary(arrow::int32(), arrow::utf8());
  auto with_dictionary = arrow::Table::Make(
      arrow::schema({arrow::field("b_key", arrow::int64()), arrow::field("b_text", dict_type)}),
      {std::make_shared<arrow::ChunkedArray>(arrow::ArrayVector{keys->Slice(0, 2), keys->Slice(2)}),
       std::make_shared<arrow::ChunkedArray>(
           arrow::ArrayVector{dictionary({"x", "y"}), dictionary({"z", "x"})})});
  ac::Declaration dict_join(kIntKeyJoinFactory,
                            {Source(probe, 1000), Source(with_dictionary, 1000)},
                            AllColumns("p_key", "b_key"));
  ASSERT_TRUE(RegisterIntKeyJoin().ok());
  auto dict_plan = ac::ExecPlan::Make().ValueOrDie();
  ASSERT_TRUE(dict_join.AddToPlan(dict_plan.get()).ok());
  EXPECT_EQ(dict_plan->ToString().find("IntKeyJoinNode"), std::string::npos)
      << dict_plan->ToString();
  for (const auto& [build, options] : cases) {
    if (build == build32) {
      // Acero itself refuses keys of two types; the fallback must give its error, not ours.
      ac::Declaration join(kIntKeyJoinFactory, {Source(probe, 1000), Source(build, 1000)}, options);
      auto table = ac::DeclarationToTable(std::move(join));
      EXPECT_FALSE(table.ok());
      continue;
    }
    Joined ours = RunJoin(kIntKeyJoinFactory, probe, build, options);
    Joined acero = RunJoin("hashjoin", probe, build, options);
    EXPECT_EQ(ours.plan.find("IntKeyJoinNode"), std::string::npos) << ours.plan;
    ASSERT_NE(ours.table, nullptr);
    ASSERT_NE(acero.table, nullptr);
    EXPECT_TRUE(ours.table->Equals(*acero.table));
  }
}

}  // namespace
}  // namespace sluice::exec
