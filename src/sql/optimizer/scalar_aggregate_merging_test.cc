// The scalar_aggregate_merging pass on plan text: queries bound over t(k, g, v) and u(uk, name)
// (bind_testing.h) through all the default passes, and the groups of copies the executors then
// run once (exec/shared_subplans.h).
#include "sql/optimizer/scalar_aggregate_merging.h"

#include <gtest/gtest.h>

#include <string>

#include "exec/shared_subplans.h"
#include "plan/compute_init.h"
#include "sql/optimizer/bind_testing.h"
#include "sql/optimizer/optimizer.h"

namespace sluice::sql {
namespace {

class ScalarAggregateMergingTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(plan::EnsureComputeInitialized().ok()); }

  // `sql` through the default passes, which end with this one, over t of `t_rows` rows (by
  // default enough to merge).
  static BoundQuery Optimized(const std::string& sql, int64_t t_rows = 1'000'000) {
    BoundQuery q = BindLogicalForTest(sql, t_rows);
    if (q.plan == nullptr) return q;
    auto st = Optimize(q.plan.get(), DefaultPasses());
    EXPECT_TRUE(st.ok()) << st.ToString();
    return q;
  }

  // How many aggregates each group of copies of one subplan holds, largest first.
  static std::vector<size_t> Groups(const PlanNode& plan) {
    std::vector<size_t> sizes;
    for (const auto& g : exec::RepeatedAggregates(plan, [](const PlanNode&) { return false; })) {
      sizes.push_back(g.size());
    }
    std::sort(sizes.rbegin(), sizes.rend());
    return sizes;
  }

  static size_t Count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
};

TEST_F(ScalarAggregateMergingTest, SubqueriesOverOneTableBecomeCopiesOfOneAggregate) {
  auto q = Optimized(
      "select (select count(*) from t where k < 10), (select avg(v) from t where k >= 10), "
      "(select max(g) from t where v > 0.5) from u where uk = 1");
  ASSERT_NE(q.plan, nullptr);
  const std::string text = q.plan->Explain();
  EXPECT_EQ(Groups(*q.plan), std::vector<size_t>{3}) << text;
  // Each copy reads t's three columns once, keeps rows any subquery keeps and feeds each
  // aggregate the rows of its own condition; COUNT(*) counts a flag.
  EXPECT_EQ(Count(text, "Scan t (1 files) columns=["), 3u) << text;
  EXPECT_EQ(Count(text, "Filter ((("), 3u) << text;
  EXPECT_NE(text.find("count(__row@"), std::string::npos) << text;
  EXPECT_EQ(Count(text, "sluice_null_unless("), 3u * 3) << text;  // avg's sum and count share one
  EXPECT_EQ(Count(text, "count_all"), 0u) << text;
}

TEST_F(ScalarAggregateMergingTest, OneConditionForAllNeedsNoMask) {
  auto q = Optimized(
      "select (select count(*) from t where k < 10) a, (select sum(v) from t where k < 10) b");
  ASSERT_NE(q.plan, nullptr);
  const std::string text = q.plan->Explain();
  EXPECT_EQ(Groups(*q.plan), std::vector<size_t>{2}) << text;
  EXPECT_EQ(Count(text, "sluice_null_unless("), 0u) << text;
  EXPECT_EQ(Count(text, "count_all()"), 2u) << text;
}

TEST_F(ScalarAggregateMergingTest, AnUnfilteredAggregateReadsEveryRow) {
  auto q = Optimized("select (select count(*) from t) a, (select sum(v) from t where k < 10) b");
  ASSERT_NE(q.plan, nullptr);
  const std::string text = q.plan->Explain();
  EXPECT_EQ(Groups(*q.plan), std::vector<size_t>{2}) << text;
  EXPECT_EQ(Count(text, "Filter"), 0u) << text;
  EXPECT_EQ(Count(text, "count_all()"), 2u) << text;          // the unfiltered one counts all rows
  EXPECT_EQ(Count(text, "sluice_null_unless("), 2u) << text;  // the sum's input, in each copy
}

TEST_F(ScalarAggregateMergingTest, SubqueriesOverOneJoinMergeWithTheirConditionsCarriedUp) {
  auto q = Optimized(
      "select (select count(*) from t join u on k = uk where name = 'a' and v > 1) a, "
      "(select sum(v) from t join u on k = uk where name = 'b') b, "
      "(select max(g) from t join u on k = uk where name = 'c' and v > 2) c");
  ASSERT_NE(q.plan, nullptr);
  const std::string text = q.plan->Explain();
  EXPECT_EQ(Groups(*q.plan), std::vector<size_t>{3}) << text;
  EXPECT_EQ(Count(text, "HashJoin inner"), 3u) << text;
  // u's filter is the OR of the three names; b has none on t, so t is read whole. Each
  // condition becomes a column (__if…) that the join passes on, and each aggregate masks by the
  // AND of its own.
  EXPECT_EQ(Count(text, "Filter (((name#"), 3u) << text;
  EXPECT_EQ(Count(text, "Filter ((v#"), 0u) << text;
  EXPECT_EQ(Count(text, "sluice_null_unless((__if"), 1u) << text;  // a's count, in its copy
}

TEST_F(ScalarAggregateMergingTest, OtherJoinsStayApart) {
  for (const char* sql : {// another join key
                          "select (select count(*) from t join u on k = uk where name = 'a') a, "
                          "(select count(*) from t join u on v = uk where name = 'b') b",
                          // a left join
                          "select (select count(*) from t left join u on k = uk where g = 'a') a, "
                          "(select count(*) from t left join u on k = uk where g = 'b') b",
                          // one table against a join of it
                          "select (select count(*) from t join u on k = uk where name = 'a') a, "
                          "(select count(*) from t where g = 'b') b"}) {
    auto q = Optimized(sql);
    ASSERT_NE(q.plan, nullptr);
    EXPECT_EQ(q.plan->Explain().find("__m"), std::string::npos) << sql << "\n" << q.plan->Explain();
  }
}

TEST_F(ScalarAggregateMergingTest, DistinctCountsOfOneValueMergeOnItsMaskedCopies) {
  // TPC-DS q28's shape: the partial step groups by each subquery's value masked by its own
  // condition, and each final step counts its own distinctly.
  auto q = Optimized(
      "select * from (select count(distinct g) a1, avg(v) a2 from t where k < 10) a, "
      "(select count(distinct g) b1 from t where k > 20) b, "
      "(select count(*) c1 from t where v > 1) c");
  ASSERT_NE(q.plan, nullptr);
  const std::string text = q.plan->Explain();
  EXPECT_EQ(Groups(*q.plan), std::vector<size_t>{3}) << text;
  EXPECT_EQ(Count(text, "Scan t (1 files) columns=["), 3u) << text;
  EXPECT_EQ(Count(text, "PartialAggregate keys=[__in"), 1u) << text;  // a's copy, then b's
  EXPECT_EQ(Count(text, "PartialAggregate keys=[__m"), 2u) << text;
  EXPECT_EQ(Count(text, "count_distinct(__m"), 2u * 3 - 2) << text;  // in each copy, the others'
}

TEST_F(ScalarAggregateMergingTest, DistinctCountsOfOtherValuesStayApart) {
  // Merged, the partial step would group by pairs of the two values.
  auto q = Optimized(
      "select (select count(distinct g) from t where k < 10) a, "
      "(select count(distinct v) from t where k > 20) b");
  ASSERT_NE(q.plan, nullptr);
  EXPECT_EQ(q.plan->Explain().find("__m"), std::string::npos) << q.plan->Explain();
  // The same value under another name (a projection's expression) is the same value.
  auto same = Optimized(
      "select (select count(distinct k + 1) from t where g = 'a') a, "
      "(select count(distinct k + 1) from t where g = 'b') b, "
      "(select count(distinct k + 2) from t where g = 'c') c");
  ASSERT_NE(same.plan, nullptr);
  EXPECT_EQ(Groups(*same.plan), std::vector<size_t>{2}) << same.plan->Explain();
}

TEST_F(ScalarAggregateMergingTest, OtherShapesStayApart) {
  // Other tables and a grouped aggregate do not merge.
  for (const char* sql :
       {"select (select count(*) from t where k < 1) a, (select count(*) from u where uk < 1) b",
        "select g, (select count(*) from t where k < 1) from t where k > 5 group by g"}) {
    auto q = Optimized(sql);
    ASSERT_NE(q.plan, nullptr);
    EXPECT_EQ(q.plan->Explain().find("__m"), std::string::npos) << sql << "\n" << q.plan->Explain();
  }
}

TEST_F(ScalarAggregateMergingTest, ASmallTableIsReadOncePerAggregate) {
  const std::string sql =
      "select (select count(*) from t where k < 10) a, (select sum(v) from t where k > 10) b";
  EXPECT_EQ(Groups(*Optimized(sql, kMinMergedScanRows - 1).plan), std::vector<size_t>{});
  EXPECT_EQ(Groups(*Optimized(sql, kMinMergedScanRows).plan), std::vector<size_t>{2});
}

TEST_F(ScalarAggregateMergingTest, ASecondRunMergesTheCopiesAgainAlike) {
  auto q = Optimized(
      "select (select min(k) from t where g = 'a') a, (select max(k) from t where g = 'b') b");
  ASSERT_NE(q.plan, nullptr);
  EXPECT_EQ(Groups(*q.plan), std::vector<size_t>{2});
  // The copies are one subplan, so the pass leaves them.
  const std::string once = q.plan->Explain();
  MergeScalarAggregates(q.plan.get());
  EXPECT_EQ(q.plan->Explain(), once);
}

}  // namespace
}  // namespace sluice::sql
