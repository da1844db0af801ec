#include "plan/common_subexpressions.h"

#include <arrow/compute/api.h>
#include <gtest/gtest.h>

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;

const cp::Expression kP = cp::field_ref("p");
const cp::Expression kD = cp::field_ref("d");
const cp::Expression kT = cp::field_ref("t");

cp::Expression Lit(int64_t v) { return cp::literal(v); }

TEST(CommonSubexpressions, TheLargestRepeatedPartIsComputedOnce) {
  // Q1's shape: p * (1 - d) alone and inside (p * (1 - d)) * (1 + t).
  const auto disc = cp::call("multiply", {kP, cp::call("subtract", {Lit(1), kD})});
  const auto charge = cp::call("multiply", {disc, cp::call("add", {Lit(1), kT})});
  auto got = FactorCommonSubexpressions({kP, disc, charge}, {"p", "d", "t", "__common0"});
  ASSERT_EQ(got.shared.size(), 1u);
  EXPECT_TRUE(got.shared[0].Equals(disc)) << got.shared[0].ToString();
  EXPECT_EQ(got.names[0], "__common1");  // __common0 is taken
  const auto ref = cp::field_ref("__common1");
  EXPECT_TRUE(got.expressions[0].Equals(kP));
  EXPECT_TRUE(got.expressions[1].Equals(ref));
  EXPECT_TRUE(got.expressions[2].Equals(cp::call("multiply", {ref, cp::call("add", {Lit(1), kT})})))
      << got.expressions[2].ToString();
}

TEST(CommonSubexpressions, PartsThatMustNotBeSharedStay) {
  const auto sum = cp::call("add", {kP, kD});
  const std::vector<std::vector<cp::Expression>> unchanged = {
      // Each part once.
      {sum, cp::call("subtract", {kP, kD})},
      // Constant parts: constant folding's business.
      {cp::call("add", {Lit(1), Lit(2)}), cp::call("add", {Lit(1), Lit(2)})},
      // A bare column read twice.
      {kP, kP},
      // Repeated only under a conditional.
      {cp::call("if_else", {cp::greater(kP, Lit(0)), sum, Lit(0)}),
       cp::call("coalesce", {sum, Lit(0)})},
      // random() gives another value at each place.
      {cp::call("random", {}, std::make_shared<cp::RandomOptions>()),
       cp::call("random", {}, std::make_shared<cp::RandomOptions>())},
  };
  for (const auto& exprs : unchanged) {
    auto got = FactorCommonSubexpressions(exprs, {"p", "d"});
    EXPECT_TRUE(got.shared.empty()) << exprs[0].ToString();
    for (size_t i = 0; i < exprs.size(); ++i) EXPECT_TRUE(got.expressions[i].Equals(exprs[i]));
  }
  // A conditional as a whole may be shared: both places evaluate all of it.
  const auto whole = cp::call("if_else", {cp::greater(kP, Lit(0)), sum, Lit(0)});
  auto got = FactorCommonSubexpressions({whole, cp::call("negate", {whole})}, {"p", "d"});
  ASSERT_EQ(got.shared.size(), 1u);
  EXPECT_TRUE(got.shared[0].Equals(whole));
}

}  // namespace
}  // namespace sluice::plan
