#include "exec/filter_node.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include "plan/compute_init.h"

namespace sluice::exec {
namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// x = 0..n-1 with every 10th NULL, s = "v<x>"; the rows of `predicate`, as a table.
std::shared_ptr<arrow::Table> Filter(int64_t n, const cp::Expression& predicate) {
  arrow::Int64Builder x;
  arrow::StringBuilder s;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE((i % 10 == 9 ? x.AppendNull() : x.Append(i)).ok());
    EXPECT_TRUE(s.Append("v" + std::to_string(i)).ok());
  }
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("x", arrow::int64()), arrow::field("s", arrow::utf8())}),
      {x.Finish().ValueOrDie(), s.Finish().ValueOrDie()});
  auto filtered =
      Filtered(ac::Declaration("table_source", ac::TableSourceNodeOptions(table, 1000)), predicate);
  EXPECT_TRUE(filtered.ok()) << filtered.status().ToString();
  auto out = ac::DeclarationToTable(std::move(*filtered));
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? (*out)->CombineChunks().ValueOrDie() : nullptr;
}

// What Arrow's filter keeps of the same rows.
std::shared_ptr<arrow::Table> Want(int64_t n, const cp::Expression& predicate) {
  auto all = Filter(n, cp::literal(true));
  auto mask = cp::ExecuteScalarExpression(predicate.Bind(*all->schema()).ValueOrDie(),
                                          cp::ExecBatch(*all->CombineChunksToBatch().ValueOrDie()))
                  .ValueOrDie();
  if (mask.is_scalar()) mask = arrow::MakeArrayFromScalar(*mask.scalar(), n).ValueOrDie();
  return cp::Filter(all, mask).ValueOrDie().table()->CombineChunks().ValueOrDie();
}

TEST(FilterNode, KeepsWhatArrowsFilterKeepsWhateverTheShare) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  const auto x = cp::field_ref("x");
  const int64_t n = 10'000;
  for (const auto& predicate : {
           cp::literal(true),                              // all: passed as they are
           cp::greater_equal(x, cp::literal(int64_t{0})),  // all but NULLs
           cp::less(x, cp::literal(int64_t{7})),           // a few: taken by index
           cp::equal(cp::call("bit_wise_and", {x, cp::literal(int64_t{3})}),
                     cp::literal(int64_t{1})),    // a quarter: filtered
           cp::less(x, cp::literal(int64_t{0})),  // none
           cp::literal(false),
       }) {
    auto got = Filter(n, predicate);
    auto want = Want(n, predicate);
    ASSERT_NE(got, nullptr);
    EXPECT_TRUE(got->Equals(*want)) << predicate.ToString() << "\n"
                                    << got->num_rows() << " rows, want " << want->num_rows();
  }
  // A predicate that is not boolean is refused, naming it.
  auto bad = Filtered(
      ac::Declaration("table_source", ac::TableSourceNodeOptions(Filter(10, cp::literal(true)))),
      cp::field_ref("x"));
  ASSERT_TRUE(bad.ok());
  auto ran = ac::DeclarationToTable(std::move(*bad));
  ASSERT_FALSE(ran.ok());
  EXPECT_NE(ran.status().message().find("a filter must be boolean"), std::string::npos)
      << ran.status().ToString();
}

}  // namespace
}  // namespace sluice::exec
