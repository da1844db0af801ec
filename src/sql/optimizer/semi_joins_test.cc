// Semi-join placement and build sides on plan text, over hand-built relations.
#include "sql/optimizer/semi_joins.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include "plan/compute_init.h"
#include "sql/optimizer/physical_choices.h"

namespace sluice::sql {
namespace {

namespace cp = arrow::compute;

class SemiJoinsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(plan::EnsureComputeInitialized().ok()); }

  static std::unique_ptr<PlanNode> ScanPlan(const std::string& name,
                                            const std::vector<std::string>& ids) {
    auto table = std::make_shared<TableSource>();
    table->name = name;
    table->files = {name + "/part-0"};
    auto scan = std::make_unique<PlanNode>();
    scan->kind = PlanNode::Kind::kScan;
    scan->table = table;
    for (const auto& id : ids) {
      scan->columns.push_back(id.substr(0, id.find('#')));
      scan->names.push_back(id);
    }
    return scan;
  }

  static JoinInput Scan(const std::string& name, const std::vector<std::string>& ids, double rows) {
    JoinInput r;
    r.name = name;
    r.plan = ScanPlan(name, ids);
    for (const auto& id : ids) {
      r.ids.push_back(id);
    }
    r.rows = rows;
    r.estimate = rows;
    return r;
  }

  // `outer IN (SELECT inner FROM sub)` with the subquery estimated at `rows`.
  static SemiJoin In(const std::string& outer, const std::string& inner, double rows,
                     bool anti = false) {
    SemiJoin s;
    s.plan = ScanPlan("sub", {inner});
    s.outer_keys = {outer};
    s.inner_keys = {inner};
    s.anti = anti;
    s.estimate = rows;
    return s;
  }
};

TEST_F(SemiJoinsTest, OnASmallerItemBeforeTheJoinsOnTheLargestAfter) {
  std::vector<JoinInput> relations;
  relations.push_back(Scan("orders", {"o_key#0"}, 1000));
  relations.push_back(Scan("lineitem", {"l_key#1"}, 6000));
  std::vector<SemiJoin> semi;
  semi.push_back(In("o_key#0", "s_key#2", 10));
  semi.push_back(In("l_key#1", "s_key#3", 10, /*anti=*/true));
  auto later = PlaceSemiJoins(&relations, std::move(semi));
  EXPECT_EQ(relations[0].plan->Explain(),
            "HashJoin semi on o_key#0 = s_key#2\n"
            "  Scan orders (1 files) columns=[o_key#0]\n"
            "  Scan sub (1 files) columns=[s_key#2]\n");
  EXPECT_DOUBLE_EQ(relations[0].estimate, 1000 / kSemiJoinReduction);
  EXPECT_EQ(relations[1].plan->Explain(), "Scan lineitem (1 files) columns=[l_key#1]\n");
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].outer_keys, std::vector<std::string>{"l_key#1"});
  EXPECT_DOUBLE_EQ(relations[0].plan->input_estimate, 1000);
  EXPECT_DOUBLE_EQ(relations[0].plan->right_estimate, 10);
}

// `o_key + 1 IN (...)`: the key's projection goes with the join, onto the item it reads, or
// after the joins where it reads several.
TEST_F(SemiJoinsTest, AKeyThatIsAnExpressionIsComputedUnderItsJoin) {
  auto key = [](std::vector<std::string> reads) {
    SemiJoin s = In("in_key#9", "s_key#2", 10);
    auto project = std::make_unique<PlanNode>();
    project->kind = PlanNode::Kind::kProject;
    project->keep_input = true;
    cp::Expression sum = cp::field_ref(reads[0]);
    for (size_t i = 1; i < reads.size(); ++i) {
      sum = cp::call("add", {sum, cp::field_ref(reads[i])});
    }
    project->expressions.push_back(cp::call("add", {sum, cp::literal(int64_t{1})}));
    project->names.push_back("in_key#9");
    s.key_project = std::move(project);
    return s;
  };
  std::vector<JoinInput> relations;
  relations.push_back(Scan("orders", {"o_key#0"}, 1000));
  relations.push_back(Scan("lineitem", {"l_key#1"}, 6000));
  std::vector<SemiJoin> semi;
  semi.push_back(key({"o_key#0"}));
  semi.push_back(key({"o_key#0", "l_key#1"}));
  auto later = PlaceSemiJoins(&relations, std::move(semi));
  EXPECT_EQ(relations[0].plan->Explain(),
            "HashJoin semi on in_key#9 = s_key#2\n"
            "  Project (input columns), in_key#9 := add(o_key#0, 1)\n"
            "    Scan orders (1 files) columns=[o_key#0]\n"
            "  Scan sub (1 files) columns=[s_key#2]\n");
  ASSERT_EQ(later.size(), 1u);
  auto plan = ApplySemiJoins(ScanPlan("t", {"o_key#0", "l_key#1"}), std::move(later), 100);
  EXPECT_EQ(plan->Explain(),
            "HashJoin semi on in_key#9 = s_key#2\n"
            "  Project (input columns), in_key#9 := add(add(o_key#0, l_key#1), 1)\n"
            "    Scan t (1 files) columns=[o_key#0, l_key#1]\n"
            "  Scan sub (1 files) columns=[s_key#2]\n");
}

TEST_F(SemiJoinsTest, AfterTheJoinsInOrderHashingTheOuterSideWhenClearlySmaller) {
  std::vector<SemiJoin> semi;
  semi.push_back(In("k#0", "s#1", 1000));                // 100 outer rows, 4x fewer: hash them
  semi.push_back(In("k#0", "s#2", 150, /*anti=*/true));  // 50 left, not 4x fewer
  auto plan = ApplySemiJoins(ScanPlan("t", {"k#0"}), std::move(semi), 100);
  // The join_order pass leaves the estimates; the build_sides pass chooses from them.
  ChooseBuildSides(plan.get());
  EXPECT_EQ(plan->Explain(),
            "HashJoin anti on k#0 = s#2\n"
            "  HashJoin semi (hashing the outer side) on k#0 = s#1\n"
            "    Scan t (1 files) columns=[k#0]\n"
            "    Scan sub (1 files) columns=[s#1]\n"
            "  Scan sub (1 files) columns=[s#2]\n");
  EXPECT_DOUBLE_EQ(LargestBuildRows(*plan), 150);
  // A join without estimates (as decoded from plan bytes) keeps the side it has.
  plan->right_estimate = -1;
  plan->build_input = true;
  ChooseBuildSides(plan.get());
  EXPECT_TRUE(plan->build_input);
}

// A scan of `name` whose schema holds `types`, one column per id.
std::unique_ptr<PlanNode> TypedScan(const std::string& name, const std::vector<std::string>& ids,
                                    const std::vector<std::shared_ptr<arrow::DataType>>& types) {
  auto table = std::make_shared<TableSource>();
  table->name = name;
  table->files = {name + "/part-0"};
  arrow::FieldVector fields;
  auto scan = std::make_unique<PlanNode>();
  scan->kind = PlanNode::Kind::kScan;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string column = ids[i].substr(0, ids[i].find('#'));
    fields.push_back(arrow::field(column, types[i]));
    scan->columns.push_back(column);
    scan->names.push_back(ids[i]);
  }
  table->schema = table->file_schema = arrow::schema(fields);
  scan->table = table;
  return scan;
}

// input ⋈ right on k#0 = c_key#2, with estimates.
std::unique_ptr<PlanNode> InnerJoin(std::unique_ptr<PlanNode> input,
                                    std::unique_ptr<PlanNode> right, double input_rows,
                                    double right_rows) {
  auto join = std::make_unique<PlanNode>();
  join->kind = PlanNode::Kind::kJoin;
  join->join_type = JoinType::kInner;
  join->left_keys = {"k#0"};
  join->right_keys = {"c_key#2"};
  join->input = std::move(input);
  join->right = std::move(right);
  join->input_estimate = input_rows;
  join->right_estimate = right_rows;
  return join;
}

TEST_F(SemiJoinsTest, AnInnerJoinHashesTheSideOfClearlyFewerBytes) {
  auto narrow = [] { return TypedScan("t", {"k#0", "v#1"}, {arrow::int64(), arrow::int64()}); };
  auto wide = [] {
    return TypedScan("customer", {"c_key#2", "c_name#3", "c_comment#4"},
                     {arrow::int64(), arrow::utf8(), arrow::utf8()});
  };
  // 15K rows of 16 bytes against 20K of 8 + 2 * 32: the wide side is 6x the bytes with more
  // rows. Its sides swap, and a project keeps the join's column order.
  auto plan = InnerJoin(narrow(), wide(), 15'000, 20'000);
  ChooseBuildSides(plan.get());
  EXPECT_EQ(plan->Explain(),
            "Project k#0 := k#0, v#1 := v#1, c_key#2 := c_key#2, c_name#3 := c_name#3, "
            "c_comment#4 := c_comment#4\n"
            "  HashJoin inner on c_key#2 = k#0\n"
            "    Scan customer (1 files) columns=[c_key#2, c_name#3, c_comment#4]\n"
            "    Scan t (1 files) columns=[k#0, v#1]\n");
  EXPECT_EQ(plan->OutputNames(),
            (std::vector<std::string>{"k#0", "v#1", "c_key#2", "c_name#3", "c_comment#4"}));
  EXPECT_DOUBLE_EQ(plan->input->right_estimate, 15'000);
  EXPECT_DOUBLE_EQ(LargestBuildRows(*plan), 15'000);
  // Not clearly fewer bytes (3x fewer is a near tie; 80K rows are more): as join order left it.
  for (double rows : {30'000.0, 80'000.0}) {
    auto kept = InnerJoin(narrow(), wide(), rows, 20'000);
    ChooseBuildSides(kept.get());
    EXPECT_EQ(kept->kind, PlanNode::Kind::kJoin) << rows;
    EXPECT_EQ(kept->input->table->name, "t") << rows;
  }
  // Without a schema to size the sides by, nothing swaps.
  auto unsized = InnerJoin(ScanPlan("t", {"k#0"}), ScanPlan("customer", {"c_key#2"}), 10, 10'000);
  ChooseBuildSides(unsized.get());
  EXPECT_EQ(unsized->kind, PlanNode::Kind::kJoin);
}

}  // namespace
}  // namespace sluice::sql
