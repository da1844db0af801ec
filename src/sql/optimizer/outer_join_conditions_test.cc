// The outer_join_conditions pass on plan text: queries bound over t(k, g, v) and u(uk, name)
// (bind_testing.h), from the outer join down, as decorrelate leaves them and after the pass.
#include "sql/optimizer/outer_join_conditions.h"

#include <gtest/gtest.h>

#include "plan/compute_init.h"
#include "sql/optimizer/bind_testing.h"
#include "sql/optimizer/decorrelate.h"

namespace sluice::sql {
namespace {

class OuterJoinConditionsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(plan::EnsureComputeInitialized().ok()); }

  // The plan of `sql` after the pass; `before`, when given, gets it as decorrelate leaves it.
  static std::string Moved(const std::string& sql, std::string* before = nullptr) {
    BoundQuery q = BindLogicalForTest(sql);
    if (q.plan == nullptr) return "";
    auto st = Decorrelate(q.plan.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (before != nullptr) *before = q.plan->Explain();
    st = MoveConditionsIntoOuterJoins(q.plan.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
    const std::string once = q.plan->Explain();
    st = MoveConditionsIntoOuterJoins(q.plan.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(q.plan->Explain(), once) << "a second run moved something";
    return once;
  }
};

TEST_F(OuterJoinConditionsTest, PreservedSideConditionsJoinItsOwnLevel) {
  std::string before;
  const std::string after = Moved(
      "select a.k from t a join t b on a.k = b.k left join u on b.k = uk "
      "where a.v > 1 and b.g = 'x' and a.v < b.v and name = 'n'",
      &before);
  // The binder leaves WHERE above the left join; the join's preserved side is a level of its
  // own, with its ON condition.
  EXPECT_EQ(before,
            "Project k#8 := k#0\n"
            "  Filter ((((v#2 > 1) and (g#4 == \"x\")) and (v#2 < v#5)) and (name#7 == \"n\"))\n"
            "    JoinSet (1 items, not ordered yet)\n"
            "      HashJoin left on k#3 = uk#6\n"
            "        Filter (k#0 == k#3)\n"
            "          JoinSet (2 items, not ordered yet)\n"
            "            Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "            Scan t (1 files) columns=[k#3, g#4, v#5]\n"
            "        Filter true\n"
            "          JoinSet (1 items, not ordered yet)\n"
            "            Scan u (1 files) columns=[uk#6, name#7]\n");
  // The conditions on a and b join that level's, where its join ordering counts them; the one
  // on u, the null-padded side, stays.
  EXPECT_EQ(after,
            "Project k#8 := k#0\n"
            "  Filter (name#7 == \"n\")\n"
            "    JoinSet (1 items, not ordered yet)\n"
            "      HashJoin left on k#3 = uk#6\n"
            "        Filter ((((k#0 == k#3) and (v#2 > 1)) and (g#4 == \"x\")) and (v#2 < v#5))\n"
            "          JoinSet (2 items, not ordered yet)\n"
            "            Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "            Scan t (1 files) columns=[k#3, g#4, v#5]\n"
            "        Filter true\n"
            "          JoinSet (1 items, not ordered yet)\n"
            "            Scan u (1 files) columns=[uk#6, name#7]\n");
}

TEST_F(OuterJoinConditionsTest, NullPaddedFullJoinAndColumnlessConditionsStay) {
  // A condition on the null-padded side, or on both sides, sees the padding above the join; a
  // full join pads both sides; WHERE false reads no column and stays where it was written.
  const std::string sql_left =
      "select a.k from t a join t b on a.k = b.k left join u on b.k = uk "
      "where name is null and coalesce(uk, 0) < a.v and false";
  std::string before;
  EXPECT_EQ(Moved(sql_left, &before), before);
  const std::string sql_full =
      "select a.k from t a join t b on a.k = b.k full join u on b.k = uk where a.v > 1";
  EXPECT_EQ(Moved(sql_full, &before), before);
}

TEST_F(OuterJoinConditionsTest, NestedOuterJoinsPassConditionsDown) {
  std::string before;
  const std::string after = Moved(
      "select a.k from t a join t b on a.k = b.k left join u on b.k = uk "
      "left join u u2 on u2.uk = a.k where a.g = 'x' and u.name = 'n'",
      &before);
  // a.g = 'x' goes through both left joins to a's level; u.name = 'n' only through u2's, as it
  // reads the null-padded side of u's.
  EXPECT_EQ(after,
            "Project k#10 := k#0\n"
            "  Filter true\n"
            "    JoinSet (1 items, not ordered yet)\n"
            "      HashJoin left on k#0 = uk#8\n"
            "        Filter (name#7 == \"n\")\n"
            "          JoinSet (1 items, not ordered yet)\n"
            "            HashJoin left on k#3 = uk#6\n"
            "              Filter ((k#0 == k#3) and (g#1 == \"x\"))\n"
            "                JoinSet (2 items, not ordered yet)\n"
            "                  Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "                  Scan t (1 files) columns=[k#3, g#4, v#5]\n"
            "              Filter true\n"
            "                JoinSet (1 items, not ordered yet)\n"
            "                  Scan u (1 files) columns=[uk#6, name#7]\n"
            "        Filter true\n"
            "          JoinSet (1 items, not ordered yet)\n"
            "            Scan u (1 files) columns=[uk#8, name#9]\n");
}

}  // namespace
}  // namespace sluice::sql
