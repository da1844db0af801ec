#include "exec/expand_node.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "plan/compute_init.h"

namespace sluice::exec {
namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// k = i % 3, v = i for i in 0..n-1.
std::shared_ptr<arrow::Table> Rows(int64_t n) {
  arrow::Int64Builder k, v;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(k.Append(i % 3).ok());
    EXPECT_TRUE(v.Append(i).ok());
  }
  return arrow::Table::Make(
      arrow::schema({arrow::field("k", arrow::int64()), arrow::field("v", arrow::int64())}),
      {k.Finish().ValueOrDie(), v.Finish().ValueOrDie()});
}

arrow::Result<std::shared_ptr<arrow::Table>> RunExpand(
    const std::shared_ptr<arrow::Table>& table,
    std::vector<std::vector<cp::Expression>> projections, std::vector<std::string> names) {
  // Batches of 7 rows, so that several batches each expand.
  ARROW_ASSIGN_OR_RAISE(
      auto expanded, Expanded(ac::Declaration("table_source", ac::TableSourceNodeOptions(table, 7)),
                              std::move(projections), std::move(names)));
  // A node that miscounts its batches leaves the plan waiting for ever: fail instead of hang.
  auto done = ac::DeclarationToTableAsync(std::move(expanded), /*use_threads=*/true);
  if (!done.Wait(/*seconds=*/60)) {
    return arrow::Status::Invalid("the plan did not finish in 60 s (miscounted batches?)");
  }
  ARROW_ASSIGN_OR_RAISE(auto got, done.result());
  return got->CombineChunks();
}

TEST(ExpandNode, GivesEachRowOncePerProjection) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  const auto null_int = cp::literal(arrow::MakeNullScalar(arrow::int64()));
  auto got = RunExpand(Rows(50),
                       {{cp::field_ref("k"), cp::literal(int32_t{0}), cp::field_ref("v"), null_int},
                        {cp::field_ref("k"), cp::literal(int32_t{1}), null_int,
                         cp::call("multiply", {cp::field_ref("v"), cp::literal(int64_t{10})})}},
                       {"k", "copy", "a", "b"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const auto& t = **got;
  ASSERT_EQ(t.num_rows(), 100);
  ASSERT_EQ(t.schema()->field(1)->type()->id(), arrow::Type::INT32);
  const auto copy = std::static_pointer_cast<arrow::Int32Array>(t.column(1)->chunk(0));
  const auto a = std::static_pointer_cast<arrow::Int64Array>(t.column(2)->chunk(0));
  const auto b = std::static_pointer_cast<arrow::Int64Array>(t.column(3)->chunk(0));
  // Each input row once with a (copy 0) and once with b = 10 v (copy 1), whatever the order.
  std::map<int64_t, int> as, bs;
  for (int64_t i = 0; i < t.num_rows(); ++i) {
    if (copy->Value(i) == 0) {
      ASSERT_TRUE(a->IsValid(i) && b->IsNull(i));
      ++as[a->Value(i)];
    } else {
      ASSERT_EQ(copy->Value(i), 1);
      ASSERT_TRUE(a->IsNull(i) && b->IsValid(i));
      ++bs[b->Value(i)];
    }
  }
  ASSERT_EQ(as.size(), 50u);
  ASSERT_EQ(bs.size(), 50u);
  for (int64_t v = 0; v < 50; ++v) {
    EXPECT_EQ(as[v], 1);
    EXPECT_EQ(bs[v * 10], 1);
  }
}

TEST(ExpandNode, RefusesProjectionsOfOtherTypesAndNamesTheFailingColumn) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  auto mixed = RunExpand(Rows(5), {{cp::field_ref("k")}, {cp::literal(1.5)}}, {"x"});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("internal: an expand's column x is int64 and double"),
            std::string::npos)
      << mixed.status().ToString();
  auto failing = RunExpand(Rows(5),
                           {{cp::field_ref("v")},
                            {cp::call("divide_checked", {cp::field_ref("v"), cp::field_ref("k")})}},
                           {"q"});
  ASSERT_FALSE(failing.ok());
  EXPECT_NE(failing.status().message().find("column \"q\""), std::string::npos)
      << failing.status().ToString();
  EXPECT_NE(failing.status().message().find("divide by zero"), std::string::npos)
      << failing.status().ToString();
}

}  // namespace
}  // namespace sluice::exec
