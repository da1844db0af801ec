// The outer_join_simplification pass on plan text: queries bound over t(k, g, v) and u(uk, name)
// (bind_testing.h), as decorrelate leaves them and after the pass.
#include "sql/optimizer/outer_join_simplification.h"

#include <gtest/gtest.h>

#include "plan/compute_init.h"
#include "sql/optimizer/bind_testing.h"
#include "sql/optimizer/decorrelate.h"

namespace sluice::sql {
namespace {

class OuterJoinSimplificationTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(plan::EnsureComputeInitialized().ok()); }

  // The plan of `sql` after the pass (run twice: the second changes nothing).
  static std::string Simplified(const std::string& sql) {
    BoundQuery q = BindLogicalForTest(sql);
    if (q.plan == nullptr) return "";
    auto st = Decorrelate(q.plan.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
    st = SimplifyOuterJoins(q.plan.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
    const std::string once = q.plan->Explain();
    st = SimplifyOuterJoins(q.plan.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(q.plan->Explain(), once) << "a second run changed something";
    return once;
  }

  static bool HasLeftJoin(const std::string& plan) {
    return plan.find("HashJoin left") != std::string::npos;
  }
};

TEST_F(OuterJoinSimplificationTest, AConditionOnThePaddedSideMakesTheJoinInner) {
  EXPECT_EQ(Simplified("select k from t left join u on k = uk where name = 'n'"),
            "Project k#5 := k#0\n"
            "  Filter ((name#4 == \"n\") and (k#0 == uk#3))\n"
            "    JoinSet (2 items, not ordered yet)\n"
            "      Filter true\n"
            "        JoinSet (1 items, not ordered yet)\n"
            "          Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Filter true\n"
            "        JoinSet (1 items, not ordered yet)\n"
            "          Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST_F(OuterJoinSimplificationTest, ConditionsThatMayHoldOnNullsLeaveTheJoinOuter) {
  for (const char* where :
       {"name is null", "coalesce(name, 'x') = 'x'", "name = 'n' or k > 1", "k > 1",
        "case when name = 'a' then true else k > 0 end", "coalesce(uk, 0) = 0"}) {
    EXPECT_TRUE(HasLeftJoin(
        Simplified(std::string("select k from t left join u on k = uk where ") + where)))
        << where;
  }
}

TEST_F(OuterJoinSimplificationTest, RejectingConditionsOfEachKind) {
  for (const char* where :
       {"name in ('a', 'b')", "name like 'a%'", "uk + 1 > k", "name is not null",
        "upper(name) = 'N' and k > 1", "(name = 'a' or uk > 3)", "cast(uk as double) < v"}) {
    const std::string plan =
        Simplified(std::string("select k from t left join u on k = uk where ") + where);
    EXPECT_FALSE(HasLeftJoin(plan)) << where << "\n" << plan;
  }
}

TEST_F(OuterJoinSimplificationTest, AChainBecomesInnerWhereEachJoinIsRejected) {
  // b's condition rejects b's NULLs; b's key then rejects u's (uk = b.k).
  std::string plan = Simplified(
      "select a.k from t a left join u on a.k = uk left join t b on uk = b.k where b.v > 1");
  EXPECT_FALSE(HasLeftJoin(plan)) << plan;
  // Only the outer join of b: u's NULLs still pass b.k = 3 (b's own key is not uk).
  plan = Simplified(
      "select a.k from t a left join u on a.k = uk left join t b on a.k = b.k where b.g = 'x'");
  EXPECT_EQ(plan.find("HashJoin left on k#0 = k#5"), std::string::npos) << plan;
  EXPECT_NE(plan.find("HashJoin left on k#0 = uk#3"), std::string::npos) << plan;
}

TEST_F(OuterJoinSimplificationTest, FullJoinsAndTheOnConditionStay) {
  // A full join is not simplified; the ON condition beyond the key joins the WHERE.
  EXPECT_NE(
      Simplified("select k from t full join u on k = uk where name = 'n'").find("HashJoin full"),
      std::string::npos);
  const std::string plan =
      Simplified("select k from t left join u on k = uk and name <> 'z' where uk > 0");
  EXPECT_FALSE(HasLeftJoin(plan)) << plan;
  EXPECT_NE(plan.find("(name#4 != \"z\")"), std::string::npos) << plan;
}

TEST_F(OuterJoinSimplificationTest, OnlyPaddedRowsKeptIsAnAntiJoin) {
  const std::string plan =
      Simplified("select k, v from t left join u on k = uk and name <> 'z' where uk is null");
  EXPECT_NE(plan.find("HashJoin anti on k#0 = uk#3"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("is_null"), std::string::npos) << plan;
  EXPECT_NE(plan.find("(name#4 != \"z\")"), std::string::npos) << plan;  // the ON's residue
  // The joined side read elsewhere, or a test of a column that is no key: a left join still.
  for (const char* sql :
       {"select k, name from t left join u on k = uk where uk is null",
        "select k from t left join u on k = uk where name is null",
        "select k from t left join u on k = uk where uk is null or k > 1",
        "select count(*) from t left join u on k = uk where uk is null group by name"}) {
    EXPECT_TRUE(HasLeftJoin(Simplified(sql))) << sql;
  }
}

}  // namespace
}  // namespace sluice::sql
