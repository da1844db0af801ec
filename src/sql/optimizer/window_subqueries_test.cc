// The window_subqueries pass on plan text: scalar subqueries over t(k, g, v) and u(uk, name)
// (bind_testing.h) that become a window over the outer rows, and the shapes that must not.
#include "sql/optimizer/window_subqueries.h"

#include <gtest/gtest.h>

#include "sql/optimizer/bind_testing.h"

namespace sluice::sql {
namespace {

// The plan text of `sql` after the pass (before decorrelate).
std::string Rewritten(const std::string& sql) {
  BoundQuery q = BindLogicalForTest(sql);
  if (q.plan == nullptr) return "";
  auto st = WindowScalarSubqueries(q.plan.get());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return q.plan->Explain();
}

bool Windowed(const std::string& sql) {
  const std::string text = Rewritten(sql);
  const bool window = text.find("Window") != std::string::npos;
  EXPECT_EQ(window, text.find("DependentJoin") == std::string::npos) << text;
  return window;
}

// TPC-H Q17's shape: t is read once, its rows of a key averaged over the outer rows of that key.
TEST(WindowSubqueriesTest, AnAverageOverTheOuterTableBecomesAWindowOnItsKey) {
  const std::string text = Rewritten(
      "select sum(v) from t, u where uk = k and name = 'x' and "
      "v < (select 0.2 * avg(v) from t t2 where t2.k = uk)");
  EXPECT_NE(text.find("Window"), std::string::npos) << text;
  EXPECT_NE(text.find("partition by k#0"), std::string::npos) << text;
  EXPECT_EQ(text.find("DependentJoin"), std::string::npos) << text;
  // One scan of t.
  EXPECT_EQ(text.find("Scan t"), text.rfind("Scan t")) << text;
  // The subquery's condition on the window, the others below it.
  EXPECT_LT(text.find("Filter (v#2 <"), text.find("Window")) << text;
  EXPECT_GT(text.find("Filter ((uk#3 == k#0) and"), text.find("Window")) << text;
}

TEST(WindowSubqueriesTest, MinMaxAndTheSubqueryValueInTheSelectListToo) {
  EXPECT_TRUE(
      Windowed("select k from t, u where k = uk and name like 'a%' and "
               "v <= (select max(v) - min(v) from t t2 where t2.k = uk)"));
  EXPECT_TRUE(
      Windowed("select k from t, u where uk = k and name = 'x' and "
               "v > (select avg(v) from t t2 where uk = t2.k)"));
}

TEST(WindowSubqueriesTest, SumsAndCountsChangeWithRepeatedRowsAndStayJoins) {
  // u may hold a key twice: each t row then meets two u rows, which doubles a window's sum.
  EXPECT_FALSE(
      Windowed("select k from t, u where uk = k and name = 'x' and "
               "v < (select sum(v) from t t2 where t2.k = uk)"));
  EXPECT_FALSE(
      Windowed("select k from t, u where uk = k and name = 'x' and "
               "v < (select count(*) from t t2 where t2.k = uk)"));
  EXPECT_FALSE(
      Windowed("select k from t, u where uk = k and name = 'x' and "
               "v < (select avg(v) + sum(v) from t t2 where t2.k = uk)"));
}

TEST(WindowSubqueriesTest, RowsTheOuterQueryDropsWithinAKeyKeepTheJoin) {
  // v > 1 drops some of a key's t rows from the outer query, not from the subquery.
  EXPECT_FALSE(
      Windowed("select k from t, u where uk = k and name = 'x' and v > 1 and "
               "v < (select avg(v) from t t2 where t2.k = uk)"));
  // The subquery's own condition is not the outer query's.
  EXPECT_FALSE(
      Windowed("select k from t, u where uk = k and name = 'x' and "
               "v < (select avg(v) from t t2 where t2.k = uk and t2.g = 'a')"));
  // Correlated on another column than the one the outer query joins on.
  EXPECT_FALSE(
      Windowed("select k from t, u where uk = k and name = 'x' and "
               "v < (select avg(v) from t t2 where t2.g = name)"));
}

TEST(WindowSubqueriesTest, WithoutAFilteredDimensionOrTheSameTableItStaysAJoin) {
  // Every t row is an outer row: windows would sort all of t.
  EXPECT_FALSE(
      Windowed("select k from t, u where uk = k and "
               "v < (select avg(v) from t t2 where t2.k = uk)"));
  // Correlated on its own row's key (a NULL key would be a partition of its own).
  EXPECT_FALSE(Windowed("select k from t where v < (select avg(v) from t t2 where t2.k = t.k)"));
  // The subquery reads a table that the outer query does not.
  EXPECT_FALSE(
      Windowed("select k from t where g = 'x' and v < (select avg(uk) from u where uk = k)"));
  // ... and one that it reads, the other way round from Q17 (u is T, t the dimension).
  EXPECT_TRUE(
      Windowed("select k from t, u where uk = k and g = 'x' and "
               "v < (select avg(uk) from u u2 where u2.uk = k)"));
  // Uncorrelated.
  EXPECT_FALSE(
      Windowed("select k from t, u where uk = k and name = 'x' and v < (select avg(v) from t t2)"));
}

// TPC-H Q2's shape: the subquery's tables joined as the outer query joins them.
TEST(WindowSubqueriesTest, SeveralTablesWithTheOuterQuerysConditionsAmongThem) {
  const std::string dimension = "(select uk as dk from u where name = 'x') d";
  EXPECT_TRUE(Windowed("select k from t, u, " + dimension +
                       " where uk = k and name = g and dk = k and dk > 0 and v = (select min(v) "
                       "from t t2, u u2 where u2.name = t2.g and u2.uk = t2.k and t2.k = dk)"));
  // Without the subquery's condition name = g, the outer rows of a key hold other t rows.
  EXPECT_FALSE(Windowed("select k from t, u, " + dimension +
                        " where uk = k and dk = k and dk > 0 and v = (select min(v) "
                        "from t t2, u u2 where u2.name = t2.g and u2.uk = t2.k and t2.k = dk)"));
  // u read twice by the outer query: which one the subquery's u is, is not clear.
  EXPECT_FALSE(
      Windowed("select k from t, u, u u3 where u.uk = k and u.name = g and u3.uk = k and "
               "u3.name = 'x' and v = (select min(v) from t t2, u u2 where u2.name = "
               "t2.g and u2.uk = t2.k and t2.k = u3.uk)"));
}

// Inside a subquery correlated with a query further out: the binder keeps that condition in a
// Filter of its own above the window, where decorrelating the outer query finds it.
TEST(WindowSubqueriesTest, InsideACorrelatedSubqueryTheOuterConditionStaysAbove) {
  BoundQuery q = BindLogicalForTest(
      "select uk from u u0 where exists (select * from t, u where uk = k and name = 'x' and "
      "k = u0.uk and v < (select avg(v) from t t2 where t2.k = uk))");
  ASSERT_NE(q.plan, nullptr);
  ASSERT_TRUE(WindowScalarSubqueries(q.plan.get()).ok());
  ASSERT_TRUE(Decorrelate(q.plan.get()).ok());
  const std::string text = q.plan->Explain();
  EXPECT_NE(text.find("HashJoin semi on uk#0 = k#2"), std::string::npos) << text;
  EXPECT_NE(text.find("Window"), std::string::npos) << text;
  EXPECT_EQ(text.find("Scan t"), text.rfind("Scan t")) << text;
}

}  // namespace
}  // namespace sluice::sql
