#include "plan/expression_text.h"

#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include "plan/decimal_kernels.h"
#include "plan/dictionary_kernels.h"

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;

TEST(ExpressionText, WritesOperatorsInfixWithTheParenthesesTheyNeed) {
  const auto x = cp::field_ref("l_linenumber#3");
  const auto minus = cp::call("subtract_checked", {x, cp::literal(int64_t{1})});
  const auto ratio = cp::call("divide_checked", {cp::literal(int64_t{7}), minus});
  EXPECT_EQ(ExpressionText(ratio), "7 / (l_linenumber - 1)");
  EXPECT_EQ(ExpressionText(cp::greater(ratio, cp::literal(int64_t{1}))),
            "(7 / (l_linenumber - 1)) > 1");
  EXPECT_EQ(ExpressionText(cp::and_(cp::is_null(x), cp::not_(cp::field_ref("b")))),
            "(l_linenumber IS NULL) AND (NOT b)");
  EXPECT_EQ(ExpressionText(cp::call(kDecimalMultiplyFunction, {x, x})),
            "l_linenumber * l_linenumber");
}

TEST(ExpressionText, CastsLiteralsAndOtherFunctions) {
  const auto cast = cp::call("cast", {cp::field_ref("l_quantity#4")},
                             cp::CastOptions::Safe(arrow::decimal128(18, 5)));
  EXPECT_EQ(ExpressionText(cast), "CAST(l_quantity AS decimal128(18, 5))");
  EXPECT_EQ(ExpressionText(cp::equal(cp::field_ref("s"), cp::literal("it's"))), "s = 'it''s'");
  EXPECT_EQ(ExpressionText(cp::literal(arrow::MakeNullScalar(arrow::int32()))), "NULL");
  EXPECT_EQ(ExpressionText(cp::call("utf8_upper", {cp::field_ref("n_name#1")})),
            "utf8_upper(n_name)");
}

// A test run per dictionary value reads as the test on the column that it is.
TEST(ExpressionText, ADictionaryMapReadsAsItsBody) {
  const arrow::Schema schema(
      {arrow::field("s#2", arrow::dictionary(arrow::int32(), arrow::utf8()))});
  const auto mapped = WithDictionaryMaps(
      cp::call("cast", {cp::field_ref("s#2")}, cp::CastOptions::Safe(arrow::date32())), schema);
  ASSERT_NE(mapped.call(), nullptr);
  EXPECT_EQ(mapped.call()->function_name, kDictionaryMapFunction) << mapped.ToString();
  EXPECT_EQ(ExpressionText(mapped), "CAST(s AS date32[day])");
  EXPECT_EQ(DictionaryMapBody(*cp::call("utf8_upper", {cp::field_ref("s")}).call()), nullptr);
}

TEST(ExpressionText, DropsOnlyAColumnsOwnId) {
  EXPECT_EQ(WithoutColumnId("l_orderkey#12"), "l_orderkey");
  EXPECT_EQ(WithoutColumnId("a#1#7"), "a#1");  // a quoted name of the query's own, with its id
  EXPECT_EQ(WithoutColumnId("total"), "total");
  EXPECT_EQ(WithoutColumnId("x#"), "x#");
  EXPECT_EQ(WithoutColumnId("#5"), "");
}

}  // namespace
}  // namespace sluice::plan
