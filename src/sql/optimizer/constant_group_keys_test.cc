// Dropping group keys that hold one value, on plan text: queries bound over t(k, g, v) and
// u(uk, name) (bind_testing.h), with filters pushed down and columns pruned first.
#include "sql/optimizer/constant_group_keys.h"

#include <gtest/gtest.h>

#include "sql/optimizer/bind_testing.h"
#include "sql/optimizer/column_pruning.h"
#include "sql/optimizer/filter_pushdown.h"

namespace sluice::sql {
namespace {

// The plan of `sql` after the pass, or "" where the pass changed nothing.
std::string Dropped(const std::string& sql) {
  BoundQuery q = BindForTest(sql);
  if (q.plan == nullptr) return "";
  PushDownFilters(q.plan.get());
  PruneColumns(q.plan.get());
  const std::string before = q.plan->Explain();
  DropConstantGroupKeys(q.plan.get());
  return q.plan->Explain() == before ? "" : q.plan->Explain();
}

TEST(ConstantGroupKeysTest, AKeyAFilterBelowFixesIsGivenBackAsItsLiteral) {
  EXPECT_EQ(Dropped("select k, g, sum(v) from t where g = 'a' group by k, g"),
            "Project k#4 := k#0, g#5 := g#1, sum#6 := __agg3\n"
            "  Project k#0 := k#0, g#1 := \"a\", __agg3 := __agg3\n"
            "    FinalAggregate keys=[k#0] aggregates=[__agg3 := sum(__p3)]\n"
            "      PartialAggregate keys=[k#0] aggregates=[__p3 := sum(__in3)]\n"
            "        Project k#0 := k#0, g#1 := g#1, __in3 := v#2\n"
            "          Filter (g#1 == \"a\")\n"
            "            Scan t (1 files) columns=[k#0, g#1, v#2] pushdown=(g#1 == \"a\")\n");
  // A DISTINCT is an aggregate without aggregates.
  EXPECT_EQ(Dropped("select distinct g, k from t where g = 'a'"),
            "Project g#3 := \"a\", k#4 := k#4\n"
            "  FinalAggregate keys=[k#4] aggregates=[]\n"
            "    PartialAggregate keys=[k#4] aggregates=[]\n"
            "      Project g#3 := g#1, k#4 := k#0\n"
            "        Filter (g#1 == \"a\")\n"
            "          Scan t (1 files) columns=[k#0, g#1] pushdown=(g#1 == \"a\")\n");
}

TEST(ConstantGroupKeysTest, TheFilterMayBeOnEitherSideOfAnInnerJoinOrAboveTheAggregate) {
  EXPECT_EQ(Dropped("select name, k, sum(v) from t join u on k = uk where name = 'n' "
                    "group by name, k"),
            "Project name#6 := name#4, k#7 := k#0, sum#8 := __agg5\n"
            "  Project name#4 := \"n\", k#0 := k#0, __agg5 := __agg5\n"
            "    FinalAggregate keys=[k#0] aggregates=[__agg5 := sum(__p5)]\n"
            "      PartialAggregate keys=[k#0] aggregates=[__p5 := sum(__in5)]\n"
            "        Project name#4 := name#4, k#0 := k#0, __in5 := v#2\n"
            "          HashJoin inner on k#0 = uk#3\n"
            "            Scan t (1 files) columns=[k#0, v#2]\n"
            "            Filter (name#4 == \"n\")\n"
            "              Scan u (1 files) columns=[uk#3, name#4] pushdown=(name#4 == \"n\")\n");
  // A filter on a group key moves below the aggregate first (TPC-DS q78's year).
  EXPECT_EQ(Dropped("select g, k, n from (select g, k, count(*) n from t group by g, k) x "
                    "where g = 'b'"),
            "Project g#7 := g#4, k#8 := k#5, n#9 := n#6\n"
            "  Project g#4 := g#1, k#5 := k#0, n#6 := __agg3\n"
            "    Project g#1 := \"b\", k#0 := k#0, __agg3 := __agg3\n"
            "      FinalAggregate keys=[k#0] aggregates=[__agg3 := sum(__p3)]\n"
            "        PartialAggregate keys=[k#0] aggregates=[__p3 := count_all()]\n"
            "          Project g#1 := g#1, k#0 := k#0\n"
            "            Filter (g#1 == \"b\")\n"
            "              Scan t (1 files) columns=[k#0, g#1] pushdown=(g#1 == \"b\")\n");
}

TEST(ConstantGroupKeysTest, OneKeyAlwaysStays) {
  // With no key, no rows would give one row rather than none.
  EXPECT_EQ(Dropped("select g, k, count(*) from t where g = 'a' and 3 = k group by g, k"),
            "Project g#4 := g#1, k#5 := k#0, count#6 := __agg3\n"
            "  Project g#1 := \"a\", k#0 := k#0, __agg3 := __agg3\n"
            "    FinalAggregate keys=[k#0] aggregates=[__agg3 := sum(__p3)]\n"
            "      PartialAggregate keys=[k#0] aggregates=[__p3 := count_all()]\n"
            "        Project g#1 := g#1, k#0 := k#0\n"
            "          Filter ((g#1 == \"a\") and (3 == k#0))\n"
            "            Scan t (1 files) columns=[k#0, g#1] pushdown=((g#1 == \"a\") and "
            "(3 == k#0))\n");
  EXPECT_EQ(Dropped("select g, count(*) from t where g = 'a' group by g"), "");
}

TEST(ConstantGroupKeysTest, KeysThatMayHoldAnotherValueStay) {
  // -0.0 = 0.0, but they are two groups.
  EXPECT_EQ(Dropped("select k, v, count(*) from t where v = 0.0 group by k, v"), "");
  // The side a left join pads with NULLs.
  EXPECT_EQ(Dropped("select k, name, count(*) from t left join "
                    "(select * from u where name = 'x') s on k = uk group by k, name"),
            "");
  // Not an equality, or not with a literal.
  EXPECT_EQ(Dropped("select k, g, count(*) from t where g >= 'a' and g <= 'a' group by k, g"), "");
  EXPECT_EQ(Dropped("select k, g, count(*) from t where g = cast(k as varchar) group by k, g"), "");
}

}  // namespace
}  // namespace sluice::sql
