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

}  // namespace
}  // namespace sluice::sql
