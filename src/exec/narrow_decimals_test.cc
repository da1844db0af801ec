// Which Parquet decimals the executor reads as decimal64, and that a plan over them gives the
// rows it gives over the same values held as decimal128.
#include "exec/narrow_decimals.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>

#include <filesystem>
#include <random>

#include "exec/plan_executor.h"
#include "plan/compute_init.h"
#include "plan/plan_node.h"
#include "plan/table_source.h"
#include "storage/object_store.h"

namespace sluice::exec {
namespace {

namespace cp = arrow::compute;
using plan::MakeNode;
using plan::PlanNode;
using Kind = PlanNode::Kind;

std::shared_ptr<arrow::Schema> LineSchema() {
  return arrow::schema(
      {arrow::field("k", arrow::int32()), arrow::field("p", arrow::decimal128(15, 2)),
       arrow::field("d", arrow::decimal128(15, 2)), arrow::field("big", arrow::decimal128(20, 2))});
}

// A scan of every column of a Parquet table of LineSchema (no files: the analysis reads none).
std::unique_ptr<PlanNode> Scan(std::shared_ptr<plan::TableSource> table = nullptr) {
  if (table == nullptr) {
    table = std::make_shared<plan::TableSource>();
    table->name = "lines";
    table->format = "parquet";
    table->schema = LineSchema();
    table->file_schema = table->schema;
    table->integer_decimal_columns = {"p", "d"};
  }
  auto scan = MakeNode(Kind::kScan);
  for (const auto& f : table->schema->fields()) {
    scan->columns.push_back(f->name());
    scan->names.push_back(f->name());
  }
  scan->table = std::move(table);
  return scan;
}

cp::Expression Ref(const std::string& name) { return cp::field_ref(name); }

cp::Expression Call(const std::string& f, std::vector<cp::Expression> args) {
  return cp::call(f, std::move(args));
}

cp::Expression Decimal(int64_t unscaled) {
  return cp::literal(std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(unscaled),
                                                               arrow::decimal128(3, 2)));
}

// Q1's shape: sum(p * (1 - d)) and sum(d) by k, where d < 0.05.
std::unique_ptr<PlanNode> Q1Shape(std::unique_ptr<PlanNode> scan) {
  auto filter = MakeNode(Kind::kFilter, std::move(scan));
  filter->predicate = Call("less", {Ref("d"), Decimal(5)});
  auto project = MakeNode(Kind::kProject, std::move(filter));
  project->expressions = {
      Ref("k"),
      Call("multiply_checked", {Ref("p"), Call("subtract_checked", {Decimal(100), Ref("d")})}),
      Ref("d")};
  project->names = {"k", "net", "disc"};
  auto aggregate = MakeNode(Kind::kAggregate, std::move(project));
  aggregate->keys = {"k"};
  aggregate->aggregates = {
      {"sum", "net", "s_net"}, {"sum", "disc", "s_disc"}, {"count_all", "", "n"}};
  aggregate->final_phase = true;
  return aggregate;
}

TEST(NarrowDecimals, OnlyDecimalsThatOurKernelsAloneReadAreNarrow) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  {
    auto plan = Q1Shape(Scan());
    const PlanNode* scan = plan->input->input->input.get();
    const NarrowDecimals narrow = FindNarrowDecimals(*plan);
    ASSERT_EQ(narrow.size(), 1u);
    // `big` has 20 digits; k is not a decimal.
    EXPECT_EQ(narrow.at(scan), (std::set<std::string>{"p", "d"}));
  }
  {
    // Decimals that some file stores as bytes are not narrow.
    auto scan = Scan();
    auto table = std::make_shared<plan::TableSource>(*scan->table);
    table->integer_decimal_columns = {"d"};
    scan->table = table;
    auto plan = Q1Shape(std::move(scan));
    const NarrowDecimals narrow = FindNarrowDecimals(*plan);
    ASSERT_EQ(narrow.size(), 1u);
    EXPECT_EQ(narrow.begin()->second, (std::set<std::string>{"d"}));
  }
  {
    // A decimal in the result, or read by min, keeps its type; the other is still narrow.
    auto project = MakeNode(Kind::kProject, Scan());
    project->expressions = {Ref("p"), Ref("d")};
    project->names = {"p", "d"};
    auto aggregate = MakeNode(Kind::kAggregate, std::move(project));
    aggregate->aggregates = {{"min", "p", "m"}, {"sum", "d", "s"}, {"count", "d", "c"}};
    const NarrowDecimals narrow = FindNarrowDecimals(*aggregate);
    ASSERT_EQ(narrow.size(), 1u);
    EXPECT_EQ(narrow.begin()->second, (std::set<std::string>{"d"}));
    EXPECT_TRUE(FindNarrowDecimals(*aggregate->input).empty());
  }
  {
    // A group key, and a function not of ours (a cast to double), keep the type.
    auto project = MakeNode(Kind::kProject, Scan());
    project->expressions = {Ref("p"),
                            cp::call("cast", {Ref("d")}, cp::CastOptions::Safe(arrow::float64()))};
    project->names = {"p", "x"};
    auto aggregate = MakeNode(Kind::kAggregate, std::move(project));
    aggregate->keys = {"p"};
    aggregate->aggregates = {{"sum", "x", "s"}};
    EXPECT_TRUE(FindNarrowDecimals(*aggregate).empty());
  }
  {
    // One file column under two names, one of them in the result: not narrow.
    auto scan = Scan();
    scan->columns = {"d", "d"};
    scan->names = {"d1", "d2"};
    auto project = MakeNode(Kind::kProject, std::move(scan));
    project->expressions = {Ref("d2"), Ref("d1")};
    project->names = {"out", "in"};
    auto aggregate = MakeNode(Kind::kAggregate, std::move(project));
    aggregate->keys = {"out"};
    aggregate->aggregates = {{"sum", "in", "s"}};
    EXPECT_TRUE(FindNarrowDecimals(*aggregate).empty());
  }
  {
    // A sort (or a join, a limit, an exchange) between the scan and the sum: not narrow. Above
    // the aggregate it changes nothing.
    auto sort = MakeNode(Kind::kSort, Scan());
    auto aggregate = MakeNode(Kind::kAggregate, std::move(sort));
    aggregate->aggregates = {{"sum", "d", "s"}};
    EXPECT_TRUE(FindNarrowDecimals(*aggregate).empty());
    auto above = MakeNode(Kind::kSort, Q1Shape(Scan()));
    EXPECT_EQ(FindNarrowDecimals(*above).size(), 1u);
  }
  {
    // Through a join, a column it passes on stays narrow; its keys and the columns of its
    // condition keep their type.
    auto left = Scan();
    auto right = Scan();
    right->names = {"k2", "p2", "d2", "big2"};
    const PlanNode* left_scan = left.get();
    const PlanNode* right_scan = right.get();
    auto join = MakeNode(Kind::kJoin, std::move(left));
    join->right = std::move(right);
    join->left_keys = {"p"};
    join->right_keys = {"d2"};
    join->join_filter = Call("less", {Ref("k"), Ref("k2")});
    auto project = MakeNode(Kind::kProject, std::move(join));
    project->expressions = {Call("multiply_checked", {Ref("d"), Ref("p2")}), Ref("k")};
    project->names = {"x", "k"};
    auto aggregate = MakeNode(Kind::kAggregate, std::move(project));
    aggregate->keys = {"k"};
    aggregate->aggregates = {{"sum", "x", "s"}};
    const NarrowDecimals narrow = FindNarrowDecimals(*aggregate);
    ASSERT_EQ(narrow.size(), 2u);
    EXPECT_EQ(narrow.at(left_scan), (std::set<std::string>{"d"}));
    EXPECT_EQ(narrow.at(right_scan), (std::set<std::string>{"p"}));
  }
}

// LineSchema's rows: NULLs in both decimals, values of up to 13 digits.
std::shared_ptr<arrow::Table> Lines(int64_t n) {
  std::mt19937_64 rng(3);
  arrow::Int32Builder k;
  arrow::Decimal128Builder p(arrow::decimal128(15, 2)), d(arrow::decimal128(15, 2)),
      big(arrow::decimal128(20, 2));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(k.Append(static_cast<int32_t>(rng() % 5)).ok());
    if (rng() % 9 == 0) {
      EXPECT_TRUE(p.AppendNull().ok());
    } else {
      EXPECT_TRUE(p.Append(arrow::Decimal128(static_cast<int64_t>(rng() % 10'000'000'000'000) -
                                             5'000'000'000'000))
                      .ok());
    }
    if (rng() % 11 == 0) {
      EXPECT_TRUE(d.AppendNull().ok());
    } else {
      EXPECT_TRUE(d.Append(arrow::Decimal128(static_cast<int64_t>(rng() % 11))).ok());
    }
    EXPECT_TRUE(big.Append(arrow::Decimal128(static_cast<int64_t>(i))).ok());
  }
  return arrow::Table::Make(LineSchema(), {k.Finish().ValueOrDie(), p.Finish().ValueOrDie(),
                                           d.Finish().ValueOrDie(), big.Finish().ValueOrDie()});
}

TEST(NarrowDecimals, AParquetScanGivesTheRowsOfTheSameValuesHeldInMemory) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  const auto dir = std::filesystem::path(::testing::TempDir()) / "narrow_decimals";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto lines = Lines(20'000);
  auto store = storage::ObjectStore::Open("file://" + dir.string()).ValueOrDie();

  auto memory = std::make_shared<plan::TableSource>();
  memory->name = "lines";
  memory->format = plan::kMemoryFormat;
  memory->schema = lines->schema();
  memory->file_schema = lines->schema();
  memory->num_rows = lines->num_rows();
  memory->rows = lines;
  auto want = Execute(*Q1Shape(Scan(memory)), {"k", "s_net", "s_disc", "n"});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto sorted = [](const std::shared_ptr<arrow::Table>& t) {
    auto order = cp::SortIndices(t, cp::SortOptions({cp::SortKey("k")})).ValueOrDie();
    return cp::Take(t, order).ValueOrDie().table();
  };

  // Decimals stored as INT64 (read as decimal64) and as fixed-length bytes (Arrow's default,
  // read as decimal128 and cast).
  for (const bool as_integer : {true, false}) {
    const std::string name = as_integer ? "int64.parquet" : "flba.parquet";
    {
      auto out = arrow::io::FileOutputStream::Open((dir / name).string()).ValueOrDie();
      parquet::WriterProperties::Builder properties;
      if (as_integer) properties.enable_store_decimal_as_integer();
      ASSERT_TRUE(parquet::arrow::WriteTable(*lines, arrow::default_memory_pool(), out, 3000,
                                             properties.build())
                      .ok());
      ASSERT_TRUE(out->Close().ok());
    }
    auto table = std::make_shared<plan::TableSource>();
    table->name = "lines";
    table->format = "parquet";
    table->store = store;
    table->files = {name};
    table->schema = lines->schema();
    table->file_schema = lines->schema();
    table->num_rows = lines->num_rows();
    // As the footers say for the INT64 file; for the other, a plan that says so anyway (files
    // replaced since): the scan then casts what Arrow reads.
    table->integer_decimal_columns = {"p", "d"};
    auto plan = Q1Shape(Scan(table));
    EXPECT_EQ(FindNarrowDecimals(*plan).size(), 1u);
    auto got = Execute(*plan, {"k", "s_net", "s_disc", "n"});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE((*got)->schema()->Equals(*(*want)->schema())) << (*got)->schema()->ToString();
    EXPECT_TRUE(sorted(*got)->Equals(*sorted(*want))) << name << "\n" << (*got)->ToString();
  }
}

}  // namespace
}  // namespace sluice::exec
