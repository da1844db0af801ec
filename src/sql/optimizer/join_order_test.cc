// Join order on plan text: hand-built relations with hand-set estimates, so each case shows
// which number decided the order.
#include "sql/optimizer/join_order.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include "plan/compute_init.h"
#include "plan/conjuncts.h"
#include "sql/optimizer/bind_testing.h"
#include "sql/optimizer/decorrelate.h"
#include "sql/optimizer/filter_pushdown.h"
#include "sql/optimizer/outer_join_simplification.h"
#include "sql/optimizer/physical_choices.h"

namespace sluice::sql {
namespace {

namespace cp = arrow::compute;

class JoinOrderTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(plan::EnsureComputeInitialized().ok()); }

  // A relation scanning table `name` with int64 columns `ids`, `rows` rows before filters.
  static JoinInput Scan(const std::string& name, const std::vector<std::string>& ids, double rows) {
    auto table = std::make_shared<TableSource>();
    table->name = name;
    table->files = {name + "/part-0"};
    JoinInput r;
    r.name = name;
    r.plan = std::make_unique<PlanNode>();
    r.plan->kind = PlanNode::Kind::kScan;
    r.plan->table = table;
    for (const auto& id : ids) {
      r.plan->columns.push_back(id.substr(0, id.find('#')));
      r.plan->names.push_back(id);
      r.ids.push_back(id);
    }
    r.rows = rows;
    r.estimate = rows;
    arrow::FieldVector fields;
    for (const auto& c : r.plan->columns) fields.push_back(arrow::field(c, arrow::int64()));
    table->schema = table->file_schema = arrow::schema(std::move(fields));
    return r;
  }

  static cp::Expression Eq(const std::string& a, const std::string& b) {
    return cp::equal(cp::field_ref(a), cp::field_ref(b));
  }

  // The joins with their conditions in a Filter above, placed by the filter_pushdown pass.
  static std::string Placed(std::unique_ptr<PlanNode> joins,
                            const std::vector<cp::Expression>& filters) {
    auto plan = WithFilter(std::move(joins), filters);
    PushDownFilters(plan.get());
    return plan->Explain();
  }
};

TEST_F(JoinOrderTest, LargestProbesAndTheFilteredDimensionJoinsFirst) {
  std::vector<JoinInput> relations;
  relations.push_back(Scan("dim_b", {"b_k#4"}, 10'000));
  relations.push_back(Scan("fact", {"f_a#0", "f_b#1"}, 1'000'000));
  relations.push_back(Scan("dim_a", {"a_k#2", "a_x#3"}, 100));
  // dim_a keeps a tenth (an equality on a column without statistics): 10 rows over 100 key
  // values, fanout 0.1, before dim_b's 10,000 rows over 10,000 values, fanout 1.
  std::vector<cp::Expression> filters, rest;
  auto joined = OrderJoins(std::move(relations),
                           {cp::and_({Eq("f_a#0", "a_k#2"), Eq("f_b#1", "b_k#4"),
                                      cp::equal(cp::field_ref("a_x#3"), cp::literal(int64_t{7}))})},
                           &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  // The join tree alone: dim_a's condition comes back for the WHERE Filter.
  EXPECT_EQ(joined->plan->Explain(),
            "HashJoin inner on f_b#1 = b_k#4\n"
            "  HashJoin inner on f_a#0 = a_k#2\n"
            "    Scan fact (1 files) columns=[f_a#0, f_b#1]\n"
            "    Scan dim_a (1 files) columns=[a_k#2, a_x#3]\n"
            "  Scan dim_b (1 files) columns=[b_k#4]\n");
  ASSERT_EQ(filters.size(), 1u);
  EXPECT_EQ(filters[0].ToString(), "(a_x#3 == 7)");
  EXPECT_TRUE(rest.empty());
  // Each join carries its sides' estimates for the physical planner: dim_b's 10,000 rows are
  // the most any join builds.
  EXPECT_DOUBLE_EQ(joined->plan->right_estimate, 10'000);
  EXPECT_DOUBLE_EQ(LargestBuildRows(*joined->plan), 10'000);
  // Without statistics a key has as many distinct values as its relation has rows: fact's
  // 1M x dim_a's 10 / 1M = 10, then 10 x 10,000 / 1M, at least one row.
  EXPECT_DOUBLE_EQ(joined->estimate, 1);
  // Columns follow the join order.
  ASSERT_EQ(joined->ids.size(), 5u);
  EXPECT_EQ(joined->ids[2], "a_k#2");
  EXPECT_EQ(Placed(std::move(joined->plan), filters),
            "HashJoin inner on f_b#1 = b_k#4\n"
            "  HashJoin inner on f_a#0 = a_k#2\n"
            "    Scan fact (1 files) columns=[f_a#0, f_b#1]\n"
            "    Filter (a_x#3 == 7)\n"
            "      Scan dim_a (1 files) columns=[a_k#2, a_x#3] pushdown=(a_x#3 == 7)\n"
            "  Scan dim_b (1 files) columns=[b_k#4]\n");
}

TEST_F(JoinOrderTest, ForeignColumnsWaitAndNonKeyConditionsFilterAfterTheJoin) {
  std::vector<JoinInput> relations;
  relations.push_back(Scan("l", {"x#0", "y#1"}, 1000));
  relations.push_back(Scan("r", {"k#2", "z#3"}, 10));
  std::vector<cp::Expression> filters, rest;
  auto joined = OrderJoins(std::move(relations),
                           {Eq("x#0", "k#2"), cp::less(cp::field_ref("y#1"), cp::field_ref("z#3")),
                            cp::greater(cp::field_ref("y#1"), cp::field_ref("scalar#9"))},
                           &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  ASSERT_EQ(filters.size(), 1u);
  EXPECT_EQ(Placed(std::move(joined->plan), filters),
            "Filter (y#1 < z#3)\n"
            "  HashJoin inner on x#0 = k#2\n"
            "    Scan l (1 files) columns=[x#0, y#1]\n"
            "    Scan r (1 files) columns=[k#2, z#3]\n");
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].ToString(), "(y#1 > scalar#9)");
}

// a IS NOT DISTINCT FROM b joins with NULLs equal where no equality connects the two; beside
// an equality it is a filter after the join.
TEST_F(JoinOrderTest, IsNotDistinctFromIsANullEqualKeyWhereNoEqualityJoins) {
  const auto not_distinct = [](const std::string& a, const std::string& b) {
    const cp::Expression x = cp::field_ref(a), y = cp::field_ref(b);
    return cp::not_(plan::IsDistinctFrom(cp::not_equal(x, y), x, y));
  };
  {
    std::vector<JoinInput> relations;
    relations.push_back(Scan("l", {"x#0", "y#1"}, 1000));
    relations.push_back(Scan("r", {"k#2", "z#3"}, 10));
    std::vector<cp::Expression> filters, rest;
    auto joined =
        OrderJoins(std::move(relations), {not_distinct("x#0", "k#2"), not_distinct("z#3", "y#1")},
                   &filters, &rest);
    ASSERT_TRUE(joined.ok()) << joined.status().ToString();
    EXPECT_TRUE(filters.empty());
    EXPECT_EQ(joined->plan->Explain(),
              "HashJoin inner on x#0 = k#2 and y#1 = z#3 (NULLs equal)\n"
              "  Scan l (1 files) columns=[x#0, y#1]\n"
              "  Scan r (1 files) columns=[k#2, z#3]\n");
  }
  std::vector<JoinInput> relations;
  relations.push_back(Scan("l", {"x#0", "y#1"}, 1000));
  relations.push_back(Scan("r", {"k#2", "z#3"}, 10));
  std::vector<cp::Expression> filters, rest;
  auto joined = OrderJoins(std::move(relations), {not_distinct("y#1", "z#3"), Eq("x#0", "k#2")},
                           &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->plan->Explain(),
            "HashJoin inner on x#0 = k#2\n"
            "  Scan l (1 files) columns=[x#0, y#1]\n"
            "  Scan r (1 files) columns=[k#2, z#3]\n");
  ASSERT_EQ(filters.size(), 1u);
  EXPECT_TRUE(plan::NotDistinctOperands(filters[0]).has_value()) << filters[0].ToString();
}

TEST_F(JoinOrderTest, AnOrOverTwoRelationsFiltersEachBeforeTheJoin) {
  std::vector<JoinInput> relations;
  relations.push_back(Scan("l", {"x#0", "y#1"}, 1000));
  relations.push_back(Scan("r", {"k#2", "z#3"}, 10));
  auto branch = [](int64_t a, int64_t b) {
    return cp::and_(cp::equal(cp::field_ref("y#1"), cp::literal(a)),
                    cp::equal(cp::field_ref("z#3"), cp::literal(b)));
  };
  std::vector<cp::Expression> filters, rest;
  auto joined =
      OrderJoins(std::move(relations), {Eq("x#0", "k#2"), cp::or_(branch(1, 2), branch(3, 4))},
                 &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  // (y = 1 AND z = 2) OR (y = 3 AND z = 4) implies y IN (1, 3) on l and z IN (2, 4) on r: the
  // OR, then its copies, which count in the estimates and filter each side before the join.
  ASSERT_EQ(filters.size(), 3u);
  EXPECT_EQ(filters[1].ToString(), "((y#1 == 1) or (y#1 == 3))");
  EXPECT_EQ(Placed(std::move(joined->plan), filters),
            "Filter (((y#1 == 1) and (z#3 == 2)) or ((y#1 == 3) and (z#3 == 4)))\n"
            "  HashJoin inner on x#0 = k#2\n"
            "    Filter ((y#1 == 1) or (y#1 == 3))\n"
            "      Scan l (1 files) columns=[x#0, y#1] pushdown=((y#1 == 1) or (y#1 == 3))\n"
            "    Filter ((z#3 == 2) or (z#3 == 4))\n"
            "      Scan r (1 files) columns=[k#2, z#3] pushdown=((z#3 == 2) or (z#3 == 4))\n");
}

TEST_F(JoinOrderTest, ABranchMeetingTheProbeOnSeveralMembersJoinsThroughTheRootsColumns) {
  // TPC-H Q9's shape: fact joins dim on k and bridge on (k, s); dim keeps a tenth. bridge.k =
  // dim.k follows, so bridge and dim join first and fact meets bridge alone; fact.k = dim.k is
  // then implied, and dropped.
  std::vector<JoinInput> relations;
  relations.push_back(Scan("fact", {"f_k#0", "f_s#1"}, 1'000'000));
  relations.push_back(Scan("dim", {"d_k#2", "d_x#3"}, 20'000));
  relations.push_back(Scan("bridge", {"b_k#4", "b_s#5"}, 80'000));
  std::vector<cp::Expression> filters, rest;
  auto joined =
      OrderJoins(std::move(relations),
                 {cp::and_({Eq("f_k#0", "d_k#2"), Eq("f_k#0", "b_k#4"), Eq("f_s#1", "b_s#5"),
                            cp::equal(cp::field_ref("d_x#3"), cp::literal(int64_t{7}))})},
                 &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(Placed(std::move(joined->plan), filters),
            "HashJoin inner on f_k#0 = b_k#4 and f_s#1 = b_s#5\n"
            "  Scan fact (1 files) columns=[f_k#0, f_s#1]\n"
            "  HashJoin inner on b_k#4 = d_k#2\n"
            "    Scan bridge (1 files) columns=[b_k#4, b_s#5]\n"
            "    Filter (d_x#3 == 7)\n"
            "      Scan dim (1 files) columns=[d_k#2, d_x#3] pushdown=(d_x#3 == 7)\n");
  // Unfiltered, dim is no help to bridge: the order stays fact's.
  relations.clear();
  relations.push_back(Scan("fact", {"f_k#0", "f_s#1"}, 1'000'000));
  relations.push_back(Scan("dim", {"d_k#2", "d_x#3"}, 20'000));
  relations.push_back(Scan("bridge", {"b_k#4", "b_s#5"}, 80'000));
  filters.clear();
  auto plain =
      OrderJoins(std::move(relations),
                 {cp::and_({Eq("f_k#0", "d_k#2"), Eq("f_k#0", "b_k#4"), Eq("f_s#1", "b_s#5")})},
                 &filters, &rest);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  const std::string text = Placed(std::move(plain->plan), filters);
  EXPECT_EQ(text.find("b_k#4 = d_k#2"), std::string::npos) << text;
  EXPECT_NE(text.find("f_k#0 = d_k#2"), std::string::npos) << text;
}

TEST_F(JoinOrderTest, ARelationWithItsSmallerDimensionsJoinsFirstWithinALargerComponent) {
  // TPC-H Q5's shape: fact meets ord and sup; ord's cust also meets sup (on nation), so the
  // five are one component with two roots. sup with nat and the filtered reg is a branch of its
  // own: fact probes its few rows first, and cust's condition on sup joins later.
  std::vector<JoinInput> relations;
  relations.push_back(Scan("fact", {"f_o#0", "f_s#1"}, 1'000'000));
  relations.push_back(Scan("ord", {"o_k#2", "o_c#3"}, 100'000));
  relations.push_back(Scan("cust", {"c_k#4", "c_n#5"}, 10'000));
  relations.push_back(Scan("sup", {"s_k#6", "s_n#7"}, 1'000));
  relations.push_back(Scan("nat", {"n_k#8", "n_r#9"}, 25));
  relations.push_back(Scan("reg", {"r_k#10", "r_x#11"}, 5));
  std::vector<cp::Expression> filters, rest;
  auto joined =
      OrderJoins(std::move(relations),
                 {cp::and_({Eq("f_o#0", "o_k#2"), Eq("o_c#3", "c_k#4"), Eq("c_n#5", "s_n#7"),
                            Eq("f_s#1", "s_k#6"), Eq("s_n#7", "n_k#8"), Eq("n_r#9", "r_k#10"),
                            cp::equal(cp::field_ref("r_x#11"), cp::literal(int64_t{1}))})},
                 &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  const std::string text = Placed(std::move(joined->plan), filters);
  EXPECT_NE(text.find("HashJoin inner on f_s#1 = s_k#6\n"
                      "      Scan fact (1 files) columns=[f_o#0, f_s#1]\n"
                      "      HashJoin inner on s_n#7 = n_k#8\n"
                      "        Scan sup (1 files) columns=[s_k#6, s_n#7]\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("HashJoin inner on s_n#7 = c_n#5"), std::string::npos) << text;
}

TEST_F(JoinOrderTest, ABranchWhoseDimensionsFilterJoinsOnItsOwnFirst) {
  // TPC-H Q7's shape: fact -> mid -> dim, where dim keeps 2 of 25 rows, beside fact -> side
  // -> other, whose other is not filtered; and an OR across the two branches.
  std::vector<JoinInput> relations;
  relations.push_back(Scan("fact", {"f_m#0", "f_s#1"}, 1'000'000));
  relations.push_back(Scan("mid", {"m_k#2", "m_d#3"}, 100'000));
  relations.push_back(Scan("dim", {"d_k#4", "d_x#5"}, 25));
  relations.push_back(Scan("side", {"s_k#6", "s_o#7"}, 1'000));
  relations.push_back(Scan("other", {"o_k#8", "o_x#9"}, 25));
  const auto x_is = [](const char* column, int64_t v) {
    return cp::equal(cp::field_ref(column), cp::literal(v));
  };
  std::vector<cp::Expression> filters, rest;
  auto joined = OrderJoins(std::move(relations),
                           {cp::and_({Eq("f_m#0", "m_k#2"), Eq("m_d#3", "d_k#4"),
                                      Eq("f_s#1", "s_k#6"), Eq("s_o#7", "o_k#8"),
                                      cp::or_({cp::and_(x_is("d_x#5", 1), x_is("o_x#9", 2)),
                                               cp::and_(x_is("d_x#5", 2), x_is("o_x#9", 1))})})},
                           &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  // mid joins the filtered dim before fact meets it: the build side is mid's matching rows.
  // side's branch is also filtered (by the OR's copy on other) and joins on its own too; the OR
  // itself filters above the joins.
  EXPECT_EQ(Placed(std::move(joined->plan), filters),
            "Filter (((d_x#5 == 1) and (o_x#9 == 2)) or ((d_x#5 == 2) and (o_x#9 == 1)))\n"
            "  HashJoin inner on f_s#1 = s_k#6\n"
            "    HashJoin inner on f_m#0 = m_k#2\n"
            "      Scan fact (1 files) columns=[f_m#0, f_s#1]\n"
            "      HashJoin inner on m_d#3 = d_k#4\n"
            "        Scan mid (1 files) columns=[m_k#2, m_d#3]\n"
            "        Filter ((d_x#5 == 1) or (d_x#5 == 2))\n"
            "          Scan dim (1 files) columns=[d_k#4, d_x#5] pushdown=((d_x#5 == 1) or "
            "(d_x#5 == 2))\n"
            "    HashJoin inner on s_o#7 = o_k#8\n"
            "      Scan side (1 files) columns=[s_k#6, s_o#7]\n"
            "      Filter ((o_x#9 == 2) or (o_x#9 == 1))\n"
            "        Scan other (1 files) columns=[o_k#8, o_x#9] pushdown=((o_x#9 == 2) or "
            "(o_x#9 == 1))\n");
  // Each copy of the OR is placed once.
  EXPECT_EQ(filters.size(), 3u);

  // Without the filters, the order stays left-deep.
  std::vector<JoinInput> plain;
  plain.push_back(Scan("fact", {"f_m#0", "f_s#1"}, 1'000'000));
  plain.push_back(Scan("mid", {"m_k#2", "m_d#3"}, 100'000));
  plain.push_back(Scan("dim", {"d_k#4", "d_x#5"}, 25));
  std::vector<cp::Expression> none, none_rest;
  auto deep = OrderJoins(std::move(plain), {cp::and_(Eq("f_m#0", "m_k#2"), Eq("m_d#3", "d_k#4"))},
                         &none, &none_rest);
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ(deep->plan->Explain(),
            "HashJoin inner on m_d#3 = d_k#4\n"
            "  HashJoin inner on f_m#0 = m_k#2\n"
            "    Scan fact (1 files) columns=[f_m#0, f_s#1]\n"
            "    Scan mid (1 files) columns=[m_k#2, m_d#3]\n"
            "  Scan dim (1 files) columns=[d_k#4, d_x#5]\n");
}

TEST_F(JoinOrderTest, NoEqualityIsACrossJoinOnAConstantKeyUpToItsLimit) {
  std::vector<JoinInput> relations;
  relations.push_back(Scan("l", {"x#0"}, 1000));
  relations.push_back(Scan("r", {"k#2"}, 10));
  std::vector<cp::Expression> filters, rest;
  auto joined = OrderJoins(std::move(relations), {}, &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->plan->Explain(),
            "HashJoin inner on __cross0@x#0 = __cross1@k#2\n"
            "  Project (input columns), __cross0@x#0 := 0\n"
            "    Scan l (1 files) columns=[x#0]\n"
            "  Project (input columns), __cross1@k#2 := 0\n"
            "    Scan r (1 files) columns=[k#2]\n");
  EXPECT_EQ(joined->estimate, 10000);
  // A product estimated beyond the limit is refused, naming the FROM item.
  relations.clear();
  relations.push_back(Scan("l", {"x#0"}, 1e6));
  relations.push_back(Scan("r", {"k#2"}, 1e6));
  joined = OrderJoins(std::move(relations), {}, &filters, &rest);
  ASSERT_FALSE(joined.ok());
  EXPECT_EQ(joined.status().message(),
            "not supported: a cross join of about 1000000000000 rows (\"r\" has no equality "
            "condition with the other FROM items)");
}

TEST_F(JoinOrderTest, AKeyWithoutStatisticsIsNotTakenForUnique) {
  // TPC-DS q85: from the largest relation (cd2), a copy of it joins on a status column with no
  // statistics, the returns on a surrogate key with known distinct values. The returns go
  // first: the status key is guessed at sqrt(rows) values, not at one value per row. (In q85
  // the copy is filtered, and with the returns it is a branch of its own that meets cd2 on
  // both keys: ABranchMeetingTheProbeOnTwoKeysJoinsOnItsOwnFirst.)
  std::vector<JoinInput> relations;
  relations.push_back(Scan("cd2", {"cd2_sk#0", "cd2_status#1"}, 1'920'000));
  relations.push_back(Scan("cd1", {"cd1_sk#2", "cd1_status#3"}, 1'920'000));
  relations.push_back(Scan("returns", {"wr_cdemo#4", "wr_cdemo2#5"}, 70'000));
  relations.back().distinct["wr_cdemo#4"] = 60'000;
  relations.back().distinct["wr_cdemo2#5"] = 60'000;
  std::vector<cp::Expression> filters, rest;
  auto joined =
      OrderJoins(std::move(relations),
                 {cp::and_({Eq("cd2_status#1", "cd1_status#3"), Eq("cd2_sk#0", "wr_cdemo2#5"),
                            Eq("cd1_sk#2", "wr_cdemo#4")})},
                 &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->plan->Explain(),
            "HashJoin inner on cd2_status#1 = cd1_status#3 and wr_cdemo#4 = cd1_sk#2\n"
            "  HashJoin inner on cd2_sk#0 = wr_cdemo2#5\n"
            "    Scan cd2 (1 files) columns=[cd2_sk#0, cd2_status#1]\n"
            "    Scan returns (1 files) columns=[wr_cdemo#4, wr_cdemo2#5]\n"
            "  Scan cd1 (1 files) columns=[cd1_sk#2, cd1_status#3]\n");
}

TEST_F(JoinOrderTest, ABranchMeetingTheProbeOnTwoKeysJoinsOnItsOwnFirst) {
  // TPC-DS q72: inventory meets catalog sales on the item and its own date_dim (d2) on the
  // date; d2 meets the sales' filtered date_dim (d1) on the week. Sales, d1 and d2 joined on
  // their own (about 7 dates per sale) meet inventory on both keys at once, instead of every
  // sale joining the ~650 inventory rows of its item.
  std::vector<JoinInput> relations;
  relations.push_back(Scan("cs", {"cs_item#2", "cs_date#3"}, 1'440'000));
  relations.back().distinct["cs_item#2"] = 18'000;
  relations.back().distinct["cs_date#3"] = 1'800;
  relations.push_back(Scan("inv", {"inv_item#0", "inv_date#1"}, 11'700'000));
  relations.back().distinct["inv_item#0"] = 18'000;
  relations.back().distinct["inv_date#1"] = 261;
  relations.push_back(Scan("d1", {"d1_k#4", "d1_week#5"}, 73'049));
  relations.back().distinct["d1_k#4"] = 73'049;
  relations.back().distinct["d1_week#5"] = 10'436;
  relations.back().estimate = 365;
  relations.push_back(Scan("d2", {"d2_k#6", "d2_week#7"}, 73'049));
  relations.back().distinct["d2_k#6"] = 73'049;
  relations.back().distinct["d2_week#7"] = 10'436;
  std::vector<cp::Expression> filters, rest;
  auto joined = OrderJoins(std::move(relations),
                           {cp::and_({Eq("inv_item#0", "cs_item#2"), Eq("cs_date#3", "d1_k#4"),
                                      Eq("inv_date#1", "d2_k#6"), Eq("d1_week#5", "d2_week#7")})},
                           &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->plan->Explain(),
            "HashJoin inner on inv_item#0 = cs_item#2 and inv_date#1 = d2_k#6\n"
            "  Scan inv (1 files) columns=[inv_item#0, inv_date#1]\n"
            "  HashJoin inner on d1_week#5 = d2_week#7\n"
            "    HashJoin inner on cs_date#3 = d1_k#4\n"
            "      Scan cs (1 files) columns=[cs_item#2, cs_date#3]\n"
            "      Scan d1 (1 files) columns=[d1_k#4, d1_week#5]\n"
            "    Scan d2 (1 files) columns=[d2_k#6, d2_week#7]\n");
  EXPECT_TRUE(filters.empty());
}

TEST_F(JoinOrderTest, ABranchKeyWithoutStatisticsIsGuessedInItsTrial) {
  // TPC-DS q24: sales meet customers and stores, which meet each other through the customers'
  // addresses on a zip code without statistics. Guessed at sqrt(rows) values, the zip keeps
  // the branch small (a store's worth of addresses), and sales meet it on both keys.
  std::vector<JoinInput> relations;
  relations.push_back(Scan("ss", {"ss_cust#0", "ss_store#1"}, 2'880'000));
  relations.back().distinct["ss_cust#0"] = 100'000;
  relations.back().distinct["ss_store#1"] = 12;
  relations.push_back(Scan("c", {"c_k#2", "c_addr#3"}, 100'000));
  relations.back().distinct["c_k#2"] = 100'000;
  relations.back().distinct["c_addr#3"] = 50'000;
  relations.push_back(Scan("ca", {"ca_k#4", "ca_zip#5"}, 50'000));
  relations.back().distinct["ca_k#4"] = 50'000;
  relations.push_back(Scan("s", {"s_k#6", "s_zip#7"}, 12));
  relations.back().distinct["s_k#6"] = 12;
  relations.back().estimate = 2;
  std::vector<cp::Expression> filters, rest;
  auto joined = OrderJoins(std::move(relations),
                           {cp::and_({Eq("ss_cust#0", "c_k#2"), Eq("ss_store#1", "s_k#6"),
                                      Eq("c_addr#3", "ca_k#4"), Eq("s_zip#7", "ca_zip#5")})},
                           &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->plan->Explain(),
            "HashJoin inner on ss_cust#0 = c_k#2 and ss_store#1 = s_k#6\n"
            "  Scan ss (1 files) columns=[ss_cust#0, ss_store#1]\n"
            "  HashJoin inner on c_addr#3 = ca_k#4\n"
            "    Scan c (1 files) columns=[c_k#2, c_addr#3]\n"
            "    HashJoin inner on ca_zip#5 = s_zip#7\n"
            "      Scan ca (1 files) columns=[ca_k#4, ca_zip#5]\n"
            "      Scan s (1 files) columns=[s_k#6, s_zip#7]\n");
}

TEST_F(JoinOrderTest, ABranchThatMultipliesRowsIsNotJoinedOnItsOwn) {
  // TPC-H Q5's shape: lineitem meets orders on the order and supplier on the supplier, and
  // orders' customer meets the supplier on the nation. Joined on its own, the branch pairs
  // every customer with its nation's suppliers; lineitem probes, and the nation equality only
  // filters a join on the supplier key.
  std::vector<JoinInput> relations;
  relations.push_back(Scan("l", {"l_order#0", "l_supp#1"}, 6'000'000));
  relations.back().distinct["l_order#0"] = 1'500'000;
  relations.back().distinct["l_supp#1"] = 10'000;
  relations.push_back(Scan("o", {"o_k#2", "o_cust#3"}, 1'500'000));
  relations.back().distinct["o_k#2"] = 1'500'000;
  relations.back().distinct["o_cust#3"] = 100'000;
  relations.back().estimate = 225'000;
  relations.push_back(Scan("c", {"c_k#4", "c_nation#5"}, 150'000));
  relations.back().distinct["c_k#4"] = 150'000;
  relations.back().distinct["c_nation#5"] = 25;
  relations.push_back(Scan("s", {"s_k#6", "s_nation#7"}, 10'000));
  relations.back().distinct["s_k#6"] = 10'000;
  relations.back().distinct["s_nation#7"] = 25;
  std::vector<cp::Expression> filters, rest;
  auto joined = OrderJoins(std::move(relations),
                           {cp::and_({Eq("l_order#0", "o_k#2"), Eq("l_supp#1", "s_k#6"),
                                      Eq("o_cust#3", "c_k#4"), Eq("c_nation#5", "s_nation#7")})},
                           &filters, &rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->plan->Explain(),
            "HashJoin inner on o_cust#3 = c_k#4 and s_nation#7 = c_nation#5\n"
            "  HashJoin inner on l_supp#1 = s_k#6\n"
            "    HashJoin inner on l_order#0 = o_k#2\n"
            "      Scan l (1 files) columns=[l_order#0, l_supp#1]\n"
            "      Scan o (1 files) columns=[o_k#2, o_cust#3]\n"
            "    Scan s (1 files) columns=[s_k#6, s_nation#7]\n"
            "  Scan c (1 files) columns=[c_k#4, c_nation#5]\n");
}

TEST_F(JoinOrderTest, FactorOrPullsOutWhatEveryBranchRepeats) {
  const auto key = Eq("x#0", "k#2");
  const auto a = cp::equal(cp::field_ref("y#1"), cp::literal(int64_t{1}));
  const auto b = cp::equal(cp::field_ref("y#1"), cp::literal(int64_t{2}));
  const auto factored = FactorOr(cp::or_(cp::and_(key, a), cp::and_(key, b)));
  ASSERT_EQ(factored.size(), 2u);
  EXPECT_EQ(factored[0].ToString(), key.ToString());
  EXPECT_EQ(factored[1].ToString(), cp::or_(a, b).ToString());
}

// The join_order pass over bound queries: t(k, g, v) and u(uk, name) (bind_testing.h).
std::string Ordered(const std::string& sql, int64_t t_rows, int64_t u_rows,
                    std::string* before = nullptr) {
  BoundQuery q = BindLogicalForTest(sql, t_rows, u_rows);
  if (q.plan == nullptr) return "";
  EXPECT_TRUE(Decorrelate(q.plan.get()).ok());
  if (before != nullptr) *before = q.plan->Explain();
  auto st = OrderJoinSets(q.plan.get());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return q.plan->Explain();
}

TEST_F(JoinOrderTest, ThePassOrdersEachJoinSetUnderItsWhere) {
  std::string before;
  EXPECT_EQ(Ordered("select name from t join u on k = uk where v > 1", 1000, 100, &before),
            "Project name#5 := name#4\n"
            "  Filter (v#2 > 1)\n"
            "    HashJoin inner on k#0 = uk#3\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
  EXPECT_EQ(before,
            "Project name#5 := name#4\n"
            "  Filter ((k#0 == uk#3) and (v#2 > 1))\n"
            "    JoinSet (2 items, not ordered yet)\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST_F(JoinOrderTest, AnEqualityOfExpressionsIsAKeyComputedOnItsSide) {
  EXPECT_EQ(Ordered("select name from t join u on k + 1 = uk * 2", 1000, 100),
            "Project name#5 := name#4\n"
            "  HashJoin inner on __key0@k#0 = __key1@uk#3\n"
            "    Project (input columns), __key0@k#0 := add_checked(k#0, 1)\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "    Project (input columns), __key1@uk#3 := multiply_checked(uk#3, 2)\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
}

TEST_F(JoinOrderTest, ADerivedTableIsEstimatedAfterItsOwnConditions) {
  // d keeps a tenth of t's 1,000 rows (an equality without statistics): 100 rows against u's
  // 500, so u probes and d is hashed. Had d been estimated as its table, t's 1,000 rows would
  // have probed.
  const std::string plan =
      Ordered("select name from (select k from t where g = 'x') d join u on d.k = uk", 1000, 500);
  EXPECT_NE(plan.find("HashJoin inner on uk#4 = k#3\n"), std::string::npos) << plan;
  EXPECT_LT(plan.find("Scan u"), plan.find("Scan t")) << plan;
}

TEST_F(JoinOrderTest, ThePassPlacesASemiJoinOnTheSmallerItemAndFillsEstimates) {
  BoundQuery q = BindLogicalForTest(
      "select name from t join u on k = uk where uk in (select k from t t2 where v > 1)");
  ASSERT_NE(q.plan, nullptr);
  ASSERT_TRUE(Decorrelate(q.plan.get()).ok());
  ASSERT_TRUE(OrderJoinSets(q.plan.get()).ok());
  EXPECT_EQ(q.plan->Explain(),
            "Project name#9 := name#4\n"
            "  HashJoin inner on k#0 = uk#3\n"
            "    Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "    HashJoin semi on uk#3 = k#8\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n"
            "      Project k#8 := k#5\n"
            "        Filter (v#7 > 1)\n"
            "          Scan t (1 files) columns=[k#5, g#6, v#7]\n");
  // Every join carries both sides' estimates for the physical passes: t's 1,000 rows probe u's
  // 100 halved by the semi join, which sees u's 100 against the subquery's third of t.
  const PlanNode& join = *q.plan->input;
  EXPECT_EQ(join.input_estimate, 1000);
  EXPECT_EQ(join.right_estimate, 50);
  EXPECT_EQ(join.right->input_estimate, 100);
  EXPECT_NEAR(join.right->right_estimate, 1000.0 / 3, 1e-9);
}

// WHERE compares an uncorrelated scalar subquery's result with u's column alone: the subquery
// joins u, with that condition, before u joins t, and u's estimate falls by the condition's
// selectivity (u, 100 rows, now hashed under t's probe either way). A condition that reads the
// result and two items stays above the joins.
TEST_F(JoinOrderTest, AScalarSubqueryComparedWithOneItemJoinsThatItemFirst) {
  BoundQuery q = BindLogicalForTest(
      "select name from t join u on k = uk "
      "where uk = (select max(k) from t t2) and v + uk > (select min(v) from t t3)");
  ASSERT_NE(q.plan, nullptr);
  ASSERT_TRUE(Decorrelate(q.plan.get()).ok());
  ASSERT_TRUE(OrderJoinSets(q.plan.get()).ok());
  EXPECT_EQ(q.plan->Explain(),
            "Project name#19 := name#4\n"
            "  Filter (add_checked(v#2, cast(uk#3, {to_type=double, allow_int_overflow=false, "
            "allow_time_truncate=false, allow_time_overflow=false, allow_decimal_truncate=false, "
            "allow_float_truncate=true, allow_invalid_utf8=false})) > min#16)\n"
            "    HashJoin left on one#17 = one#18\n"
            "      Project (input columns), one#17 := 1\n"
            "        HashJoin inner on k#0 = uk#3\n"
            "          Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "          Filter (uk#3 == max#9)\n"
            "            HashJoin left on one#10 = one#11\n"
            "              Project (input columns), one#10 := 1\n"
            "                Scan u (1 files) columns=[uk#3, name#4]\n"
            "              Project (input columns), one#11 := 1\n"
            "                Project max#9 := __agg8\n"
            "                  FinalAggregate keys=[] aggregates=[__agg8 := max(__p8)]\n"
            "                    PartialAggregate keys=[] aggregates=[__p8 := max(__in8)]\n"
            "                      Project __in8 := k#5\n"
            "                        Scan t (1 files) columns=[k#5, g#6, v#7]\n"
            "      Project (input columns), one#18 := 1\n"
            "        Project min#16 := __agg15\n"
            "          FinalAggregate keys=[] aggregates=[__agg15 := min(__p15)]\n"
            "            PartialAggregate keys=[] aggregates=[__p15 := min(__in15)]\n"
            "              Project __in15 := v#14\n"
            "                Scan t (1 files) columns=[k#12, g#13, v#14]\n");
  const PlanNode& inner = *q.plan->input->input->input->input;
  ASSERT_EQ(inner.kind, PlanNode::Kind::kJoin);
  EXPECT_EQ(inner.input_estimate, 1000);
  EXPECT_LT(inner.right_estimate, 100);                // u after `uk = max`
  EXPECT_EQ(inner.right->input->input_estimate, 100);  // the subquery's join sees all of u
}

// The largest item is t left-joined to u: the other items' joins read t alone, so they run first
// and the left join on what they keep, with the conditions on its padded side above it. Not
// when a condition reads the padded side and another item, nor for an item other than the
// largest (whose joins to a larger item would give the left join more rows to probe).
TEST_F(JoinOrderTest, ALeftJoinOfTheLargestItemRunsAfterItsInnerJoins) {
  EXPECT_EQ(Ordered("select a.k from t a left join u b on a.k = b.uk join u c on a.g = c.name "
                    "where c.uk = 1 and b.name is null",
                    1000, 100),
            "Project k#7 := k#0\n"
            "  Filter ((uk#5 == 1) and is_null(name#4, {nan_is_null=false}))\n"
            "    HashJoin left on k#0 = uk#3\n"
            "      HashJoin inner on g#1 = name#6\n"
            "        Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "        Scan u (1 files) columns=[uk#5, name#6]\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
  EXPECT_EQ(Ordered("select a.k from t a left join u b on a.k = b.uk join u c on b.name = c.name",
                    1000, 100),
            "Project k#7 := k#0\n"
            "  HashJoin inner on name#4 = name#6\n"
            "    HashJoin left on k#0 = uk#3\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n"
            "    Scan u (1 files) columns=[uk#5, name#6]\n");
  EXPECT_EQ(
      Ordered("select a.k from t a left join u b on a.k = b.uk join u c on a.g = c.name", 10, 100),
      "Project k#7 := k#0\n"
      "  HashJoin inner on name#6 = g#1\n"
      "    Scan u (1 files) columns=[uk#5, name#6]\n"
      "    HashJoin left on k#0 = uk#3\n"
      "      Scan t (1 files) columns=[k#0, g#1, v#2]\n"
      "      Scan u (1 files) columns=[uk#3, name#4]\n");
}

// A left join whose padded rows alone are kept is an anti join (outer_join_simplification.h); on
// the largest item it too runs after the inner joins, which filter its rows, since no condition
// can read its other side. Not on an item other than the largest.
TEST_F(JoinOrderTest, AnAntiJoinOfTheLargestItemRunsAfterItsInnerJoins) {
  auto ordered = [](const std::string& sql, int64_t t_rows, int64_t u_rows) {
    BoundQuery q = BindLogicalForTest(sql, t_rows, u_rows);
    if (q.plan == nullptr) return std::string();
    EXPECT_TRUE(Decorrelate(q.plan.get()).ok());
    EXPECT_TRUE(SimplifyOuterJoins(q.plan.get()).ok());
    auto st = OrderJoinSets(q.plan.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
    return q.plan->Explain();
  };
  EXPECT_EQ(ordered("select a.k from t a left join u b on a.k = b.uk join u c on a.g = c.name "
                    "where c.uk = 1 and b.uk is null",
                    1000, 100),
            "Project k#7 := k#0\n"
            "  Filter (uk#5 == 1)\n"
            "    HashJoin anti on k#0 = uk#3\n"
            "      HashJoin inner on g#1 = name#6\n"
            "        Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "        Scan u (1 files) columns=[uk#5, name#6]\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
  EXPECT_EQ(ordered("select a.k from t a left join u b on a.k = b.uk join u c on a.g = c.name "
                    "where b.uk is null",
                    10, 100),
            "Project k#7 := k#0\n"
            "  HashJoin inner on name#6 = g#1\n"
            "    Scan u (1 files) columns=[uk#5, name#6]\n"
            "    HashJoin anti on k#0 = uk#3\n"
            "      Scan t (1 files) columns=[k#0, g#1, v#2]\n"
            "      Scan u (1 files) columns=[uk#3, name#4]\n");
}

}  // namespace
}  // namespace sluice::sql
