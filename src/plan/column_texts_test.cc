#include "plan/column_texts.h"

#include <arrow/compute/api.h>
#include <gtest/gtest.h>

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;

// project __in1 := x * (1 - y), __in2 := z; partial sum, count(*), count(DISTINCT z); final.
std::unique_ptr<PlanNode> Aggregated(std::unique_ptr<PlanNode> below_final = nullptr) {
  if (below_final == nullptr) {
    auto read = MakeNode(PlanNode::Kind::kShuffleRead);  // a stand-in leaf; no texts
    auto project = MakeNode(PlanNode::Kind::kProject, std::move(read));
    project->names = {"__in1", "__in2"};
    project->expressions = {
        cp::call("multiply_checked",
                 {cp::field_ref("x#1"),
                  cp::call("subtract_checked", {cp::literal(1), cp::field_ref("y#2")})}),
        cp::field_ref("z#3")};
    below_final = MakeNode(PlanNode::Kind::kAggregate, std::move(project));
    below_final->aggregates = {
        {"sum", "__in1", "__p1"}, {"count_all", "", "__p2"}, {"count_distinct", "__in2", "__p3"}};
  }
  auto final_aggregate = MakeNode(PlanNode::Kind::kAggregate, std::move(below_final));
  final_aggregate->final_phase = true;
  final_aggregate->aggregates = {
      {"sum", "__p1", "__agg1"}, {"sum", "__p2", "__agg2"}, {"sum", "__p3", "__agg3"}};
  return final_aggregate;
}

TEST(ColumnTexts, AggregatesReadAsTheirCallsAndArgumentsAsTheirExpressions) {
  auto plan = Aggregated();
  const ColumnTexts texts = HiddenColumnTexts(*plan);
  EXPECT_EQ(texts.at("__agg1").text, "sum(x * (1 - y))");
  EXPECT_EQ(texts.at("__agg2").text, "count(*)");
  EXPECT_EQ(texts.at("__agg3").text, "count(DISTINCT z)");
  const auto having = cp::greater(
      cp::call("divide", {cp::field_ref("__agg1"),
                          cp::call("subtract", {cp::field_ref("__agg2"), cp::literal(1)})}),
      cp::literal(300));
  EXPECT_EQ(ExpressionText(having, &texts), "(sum(x * (1 - y)) / (count(*) - 1)) > 300");
  // An operator's text in another operator keeps its parentheses.
  EXPECT_EQ(ExpressionText(cp::call("add", {cp::field_ref("__in1"), cp::literal(2)}), &texts),
            "(x * (1 - y)) + 2");
  EXPECT_EQ(ExpressionText(having), "(__agg1 / (__agg2 - 1)) > 300");  // without texts
  EXPECT_TRUE(ReadsHiddenColumn(having));
  EXPECT_FALSE(ReadsHiddenColumn(cp::field_ref("l_tax#4")));
}

TEST(ColumnTexts, AShuffleReadCarriesWhatTheStageBelowComputed) {
  // A worker's final task: a shuffle read where the partial aggregate was, with the texts the
  // driver took from that subtree.
  auto whole = Aggregated();
  auto read = MakeNode(PlanNode::Kind::kShuffleRead);
  read->shuffle_read.column_texts = HiddenColumnTexts(*whole->input);
  auto cut = Aggregated(std::move(read));
  const ColumnTexts on_worker = HiddenColumnTexts(*cut);
  const ColumnTexts in_process = HiddenColumnTexts(*whole);
  for (const char* name : {"__agg1", "__agg2", "__agg3"}) {
    EXPECT_EQ(on_worker.at(name).text, in_process.at(name).text) << name;
  }
  // Without them the names stay the plan's.
  auto bare = Aggregated(MakeNode(PlanNode::Kind::kShuffleRead));
  EXPECT_EQ(HiddenColumnTexts(*bare).at("__agg1").text, "sum(__p1)");
}

}  // namespace
}  // namespace sluice::plan
