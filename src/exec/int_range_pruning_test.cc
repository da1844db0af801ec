#include "exec/int_range_pruning.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace sluice::exec {
namespace {

namespace cp = arrow::compute;

// One file of three row groups: k spans 0..9, 10..19 and a group without statistics; d, a
// decimal stored as integers, spans 100..199 in each.
plan::TableSource Table() {
  plan::TableSource t;
  t.schema =
      arrow::schema({arrow::field("k", arrow::int32()), arrow::field("d", arrow::decimal128(9, 2)),
                     arrow::field("u", arrow::uint32())});
  t.row_group_int_ranges["k"] = {{{0, 9}, {10, 19}, {1, 0}}};
  t.row_group_int_ranges["d"] = {{{100, 199}, {100, 199}, {100, 199}}};
  t.row_group_int_ranges["u"] = {{{0, 9}, {10, 19}, {20, 29}}};
  return t;
}

// Whether each of the three row groups is kept.
std::vector<bool> Keeps(const std::vector<cp::Expression>& conjuncts) {
  int known = 0;
  const std::set<int> excluded = IntRangeExcludes(Table(), 0, conjuncts, &known);
  EXPECT_EQ(known, 3);
  std::vector<bool> keeps;
  for (int id = 0; id < 3; ++id) keeps.push_back(!excluded.count(id));
  return keeps;
}

TEST(IntRangePruning, ComparisonsWithAnIntegerLiteralRuleOutGroups) {
  const auto k = cp::field_ref("k");
  EXPECT_EQ(Keeps({cp::greater_equal(k, cp::literal(12))}), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(Keeps({cp::less(k, cp::literal(10))}), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(Keeps({cp::equal(k, cp::literal(int64_t{9}))}), (std::vector<bool>{true, false, true}));
  // The literal on the left: 15 > k is k < 15.
  EXPECT_EQ(Keeps({cp::greater(cp::literal(15), k)}), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(Keeps({cp::greater(cp::literal(5), k)}), (std::vector<bool>{true, false, true}));
  // Conjuncts add up: nothing is between 12 and 8.
  EXPECT_EQ(Keeps({cp::greater_equal(k, cp::literal(12)), cp::less_equal(k, cp::literal(8))}),
            (std::vector<bool>{false, false, true}));
}

TEST(IntRangePruning, OtherConjunctsAndColumnsKeepEveryGroup) {
  const std::vector<bool> all = {true, true, true};
  // A decimal's statistics are its unscaled digits; an unsigned column's may read as negative.
  EXPECT_EQ(Keeps({cp::greater(cp::field_ref("d"), cp::literal(500))}), all);
  EXPECT_EQ(Keeps({cp::greater(cp::field_ref("u"), cp::literal(50))}), all);
  EXPECT_EQ(Keeps({cp::not_equal(cp::field_ref("k"), cp::literal(3))}), all);
  EXPECT_EQ(Keeps({cp::greater(cp::field_ref("k"), cp::literal(2.5))}), all);
  EXPECT_EQ(Keeps({cp::is_null(cp::field_ref("k"))}), all);
  EXPECT_EQ(Keeps({cp::greater(cp::field_ref("missing"), cp::literal(1))}), all);
}

}  // namespace
}  // namespace sluice::exec
