// The decorrelate pass on plan text: subqueries bound over t(k, g, v) and u(uk, name)
// (bind_testing.h), the dependent join the binder leaves and the join the pass makes of it.
#include "sql/optimizer/decorrelate.h"

#include <gtest/gtest.h>

#include "sql/optimizer/bind_testing.h"

namespace sluice::sql {
namespace {

// The subquery's join of `sql` (the first join from the top) as the binder leaves it and after
// the pass, from that join's line on.
struct Rewrite {
  std::string before, after;
};

std::string FromFirstJoin(const std::string& text) {
  size_t at = text.find("Join");
  if (at == std::string::npos) return text;
  return text.substr(text.rfind('\n', at) + 1);
}

Rewrite Decorrelated(const std::string& sql) {
  BoundQuery q = BindLogicalForTest(sql);
  if (q.plan == nullptr) return {};
  Rewrite r;
  r.before = FromFirstJoin(q.plan->Explain());
  auto st = Decorrelate(q.plan.get());
  EXPECT_TRUE(st.ok()) << st.ToString();
  r.after = FromFirstJoin(q.plan->Explain());
  EXPECT_EQ(r.after.find("DependentJoin"), std::string::npos) << r.after;
  return r;
}

TEST(DecorrelateTest, ExistsBecomesASemiJoinOnItsEqualitiesWithTheRestAsItsFilter) {
  Rewrite r = Decorrelated(
      "select k from t where exists (select * from u where uk = k and name <> g and uk > 1)");
  EXPECT_EQ(r.before,
            "    DependentJoin semi\n"
            "      JoinSet (1 items, not ordered yet)\n"
            "        Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Filter ((uk#3 == k#0) and (name#4 != g#1))\n"
            "        Filter (uk#3 > 1)\n"
            "          JoinSet (1 items, not ordered yet)\n"
            "            Scan u (1 files) columns=[uk#3, name#4]\n");
  EXPECT_EQ(r.after,
            "    HashJoin semi on k#0 = uk#3 filter (name#4 != g#1)\n"
            "      JoinSet (1 items, not ordered yet)\n"
            "        Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Filter (uk#3 > 1)\n"
            "        JoinSet (1 items, not ordered yet)\n"
            "          Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST(DecorrelateTest, NotExistsBecomesAnAntiJoin) {
  Rewrite r = Decorrelated("select k from t where not exists (select * from u where uk = k)");
  EXPECT_EQ(r.after.substr(0, r.after.find('\n')), "    HashJoin anti on k#0 = uk#3");
}

TEST(DecorrelateTest, ACorrelatedScalarSubqueryIsGroupedByItsKeyAndLeftJoinedOnIt) {
  Rewrite r = Decorrelated("select k from t where v > (select count(*) from u where uk = k)");
  EXPECT_EQ(r.after,
            "    HashJoin left on k#0 = uk#3\n"
            "      JoinSet (1 items, not ordered yet)\n"
            "        Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Project uk#3 := uk#3, count#6 := __agg5\n"
            "        FinalAggregate keys=[uk#3] aggregates=[__agg5 := sum(__p5)]\n"
            "          PartialAggregate keys=[uk#3] aggregates=[__p5 := count_all()]\n"
            "            Project uk#3 := uk#3\n"
            "              Filter true\n"
            "                JoinSet (1 items, not ordered yet)\n"
            "                  Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST(DecorrelateTest, AnUncorrelatedScalarSubqueryJoinsEveryRowOnAConstantKey) {
  Rewrite r = Decorrelated("select k from t where v > (select max(uk) from u)");
  EXPECT_EQ(r.after,
            "    HashJoin left on one#7 = one#8\n"
            "      Project (input columns), one#7 := 1\n"
            "        JoinSet (1 items, not ordered yet)\n"
            "          Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Project (input columns), one#8 := 1\n"
            "        Project max#6 := __agg5\n"
            "          FinalAggregate keys=[] aggregates=[__agg5 := max(__p5)]\n"
            "            PartialAggregate keys=[] aggregates=[__p5 := max(__in5)]\n"
            "              Project __in5 := uk#3\n"
            "                Filter true\n"
            "                  JoinSet (1 items, not ordered yet)\n"
            "                    Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST(DecorrelateTest, InIsASemiJoinOnItsColumnAndACorrelatedInOnItsKeysToo) {
  Rewrite plain = Decorrelated("select k from t where k in (select uk from u)");
  EXPECT_EQ(plain.after.substr(0, plain.after.find('\n')), "    HashJoin semi on k#0 = uk#5");
  Rewrite correlated = Decorrelated("select k from t where k in (select uk from u where name = g)");
  EXPECT_EQ(correlated.after,
            "    HashJoin semi on k#0 = uk#5 and g#1 = name#4\n"
            "      JoinSet (1 items, not ordered yet)\n"
            "        Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Project name#4 := name#4, uk#5 := uk#3\n"
            "        Filter true\n"
            "          JoinSet (1 items, not ordered yet)\n"
            "            Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST(DecorrelateTest, ANestedSubqueryIsDecorrelatedFirst) {
  Rewrite r = Decorrelated(
      "select k from t where exists (select * from u where uk = k and "
      "uk > (select max(k) from t t2 where t2.g = u.name))");
  EXPECT_EQ(r.after.find("Dependent"), std::string::npos);
  EXPECT_NE(r.after.find("HashJoin semi on k#0 = uk#3"), std::string::npos) << r.after;
  EXPECT_NE(r.after.find("HashJoin left on name#4 = g#6"), std::string::npos) << r.after;
}

TEST(DecorrelateTest, KeysPassThroughAnInnerScalarSubquerysJoinAndAreNotRepeated) {
  // The uncorrelated subquery in the select list joins between the output and the WHERE.
  Rewrite r = Decorrelated(
      "select k from t where v > (select max(uk) - (select min(k) from t t2) from u where uk = k)");
  EXPECT_NE(r.after.find("HashJoin left on k#0 = uk#3\n"), std::string::npos) << r.after;
  // Grouped by its own correlation column: the key is already an output of the projection.
  Rewrite grouped = Decorrelated(
      "select k from t where k in (select max(uk) from u where name = g group by name)");
  EXPECT_NE(grouped.after.find("HashJoin semi on k#0 = max#"), std::string::npos) << grouped.after;
  EXPECT_NE(grouped.after.find("and g#1 = name#4"), std::string::npos) << grouped.after;
  EXPECT_EQ(grouped.after.find("name#4 := name#4, name#4 := name#4"), std::string::npos)
      << grouped.after;
}

}  // namespace
}  // namespace sluice::sql
