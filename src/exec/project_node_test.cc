#include "exec/project_node.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan/compute_init.h"

namespace sluice::exec {
namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// x = 1..n, then 0 once; y = x * 2, then 5.
std::shared_ptr<arrow::Table> Rows(int64_t n, bool with_zero) {
  arrow::Int64Builder x, y;
  for (int64_t i = 1; i <= n; ++i) {
    EXPECT_TRUE(x.Append(i).ok());
    EXPECT_TRUE(y.Append(i * 2).ok());
  }
  if (with_zero) {
    EXPECT_TRUE(x.Append(0).ok());
    EXPECT_TRUE(y.Append(5).ok());
  }
  return arrow::Table::Make(
      arrow::schema({arrow::field("x", arrow::int64()), arrow::field("y", arrow::int64())}),
      {x.Finish().ValueOrDie(), y.Finish().ValueOrDie()});
}

arrow::Result<std::shared_ptr<arrow::Table>> RunProject(const std::shared_ptr<arrow::Table>& table,
                                                        std::vector<cp::Expression> expressions,
                                                        std::vector<std::string> names,
                                                        std::vector<std::string> labels = {}) {
  ARROW_ASSIGN_OR_RAISE(
      auto projected,
      Projected(ac::Declaration("table_source", ac::TableSourceNodeOptions(table, 7)),
                std::move(expressions), std::move(names), std::move(labels)));
  ARROW_ASSIGN_OR_RAISE(auto got, ac::DeclarationToTable(std::move(projected), false));
  return got->CombineChunks();
}

TEST(ProjectNode, ComputesItsColumnsAsAceroDoes) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  auto table = Rows(50, /*with_zero=*/false);
  const auto quotient = cp::call("divide_checked", {cp::field_ref("y"), cp::field_ref("x")});
  const auto plus = cp::call("add", {cp::field_ref("x"), cp::literal(int64_t{1})});
  std::vector<cp::Expression> expressions = {cp::field_ref("x"), quotient, plus};
  std::vector<std::string> names = {"x", "q", "p"};
  auto got = RunProject(table, expressions, names);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  auto want = ac::DeclarationToTable(
      ac::Declaration::Sequence({{"table_source", ac::TableSourceNodeOptions(table, 7)},
                                 {"project", ac::ProjectNodeOptions(expressions, names)}}),
      false);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_TRUE((*got)->Equals(*(*want)->CombineChunks().ValueOrDie())) << (*got)->ToString();
  EXPECT_EQ((*got)->schema()->field_names(), names);
  // EXPLAIN's physical plan shows what it computes, as it did Acero's project.
  auto text = ac::DeclarationToString(
      Projected(ac::Declaration("table_source", ac::TableSourceNodeOptions(table, 7)), expressions,
                names)
          .ValueOrDie());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("projection=[x, divide_checked(y, x) as q, add(x, 1) as p]"),
            std::string::npos)
      << *text;
}

// The error of the row that fails names the column computed, and its expression, so that a
// query with several divisions says which one divided by zero.
TEST(ProjectNode, AnErrorNamesTheColumnThatFailed) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  auto table = Rows(50, /*with_zero=*/true);  // the last row's x is 0
  const auto fine = cp::call("divide_checked", {cp::field_ref("x"), cp::literal(int64_t{2})});
  const auto fails = cp::call("divide_checked", {cp::field_ref("y"), cp::field_ref("x")});
  auto got = RunProject(table, {fine, fails}, {"half", "ratio"});
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(got.status().IsInvalid()) << got.status().ToString();
  const std::string message = got.status().message();
  EXPECT_NE(message.find("column \"ratio\" (y / x): divide by zero"), std::string::npos) << message;
  EXPECT_EQ(message.find("half"), std::string::npos) << message;
  // A label given by the caller replaces the column's name.
  got = RunProject(table, {fine, fails}, {"half", "ratio"}, {"", "the part y / x of \"r\""});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("the part y / x of \"r\": divide by zero"),
            std::string::npos)
      << got.status().ToString();
}

TEST(ProjectNode, RefusesNamesThatDoNotMatch) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  auto got = RunProject(Rows(3, false), {cp::field_ref("x")}, {"x", "extra"});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("internal"), std::string::npos);
}

}  // namespace
}  // namespace sluice::exec
