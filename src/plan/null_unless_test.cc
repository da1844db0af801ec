#include "plan/null_unless.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "plan/compute_init.h"

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;

std::shared_ptr<arrow::Array> ArrayOf(const std::shared_ptr<arrow::DataType>& type,
                                      const std::string& json) {
  auto a = arrow::json::ArrayFromJSONString(type, json);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? *a : nullptr;
}

// null_unless as the expression evaluator calls it: the same answer as
// case_when(condition, value), which is what it replaces.
class NullUnlessTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(EnsureComputeInitialized().ok()); }

  static void ExpectLikeCaseWhen(const arrow::Datum& value, const arrow::Datum& condition) {
    auto got = cp::CallFunction(kNullUnlessFunction, {value, condition});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const cp::MakeStructOptions names({"c0"});
    auto conditions = cp::CallFunction("make_struct", std::vector<arrow::Datum>{condition}, &names);
    ASSERT_TRUE(conditions.ok());
    auto want = cp::CallFunction("case_when", std::vector<arrow::Datum>{*conditions, value});
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    if (want->is_scalar()) {
      ASSERT_TRUE(got->is_scalar());
      EXPECT_TRUE(got->scalar()->Equals(*want->scalar()))
          << got->scalar()->ToString() << " vs " << want->scalar()->ToString();
      return;
    }
    auto got_array = got->make_array();
    ASSERT_TRUE(got_array->ValidateFull().ok()) << got_array->ValidateFull().ToString();
    EXPECT_TRUE(got_array->Equals(*want->make_array())) << got_array->ToString() << "\nvs\n"
                                                        << want->make_array()->ToString();
    EXPECT_EQ(got_array->null_count(), want->make_array()->null_count());
  }
};

TEST_F(NullUnlessTest, KeepsValuesWhereTheConditionIsTrue) {
  const auto condition = ArrayOf(arrow::boolean(), "[true, false, null, true, true, false, null]");
  for (const auto& [type, json] :
       std::vector<std::pair<std::shared_ptr<arrow::DataType>, std::string>>{
           {arrow::int64(), "[1, 2, 3, null, 5, null, 7]"},
           {arrow::float64(), "[1.5, -2, 0, null, 5, 6, 7]"},
           {arrow::decimal128(15, 2), R"(["1.00", "2.50", null, "-4.25", "5.00", "6.00", "7.00"])"},
           {arrow::utf8(), R"(["a", "", "c", null, "é", "f", "g"])"},
           {arrow::boolean(), "[true, false, true, null, false, true, false]"},
           {arrow::date32(), "[1, 2, 3, 4, null, 6, 7]"}}) {
    SCOPED_TRACE(type->ToString());
    const auto value = ArrayOf(type, json);
    ExpectLikeCaseWhen(value, condition);
    // Slices at offsets that are not byte boundaries, on both sides.
    ExpectLikeCaseWhen(value->Slice(3, 4), condition->Slice(1, 4));
    ExpectLikeCaseWhen(value->Slice(1, 5), condition->Slice(2, 5));
  }
}

TEST_F(NullUnlessTest, ScalarsOnEitherSide) {
  const auto values = ArrayOf(arrow::int32(), "[1, null, 3]");
  const auto condition = ArrayOf(arrow::boolean(), "[true, false, null]");
  for (const auto& c : {arrow::Datum(true), arrow::Datum(false),
                        arrow::Datum(arrow::MakeNullScalar(arrow::boolean()))}) {
    SCOPED_TRACE(c.ToString());
    ExpectLikeCaseWhen(values, c);
    ExpectLikeCaseWhen(arrow::Datum(int32_t{4}), c);
  }
  ExpectLikeCaseWhen(arrow::Datum(int32_t{4}), condition);
  ExpectLikeCaseWhen(arrow::Datum(arrow::MakeNullScalar(arrow::int32())), condition);
}

TEST_F(NullUnlessTest, LongInputsAcrossWords) {
  arrow::Int64Builder values;
  arrow::BooleanBuilder condition;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE((i % 7 == 0 ? values.AppendNull() : values.Append(i)).ok());
    ASSERT_TRUE((i % 11 == 0 ? condition.AppendNull() : condition.Append(i % 3 != 0)).ok());
  }
  auto v = values.Finish().ValueOrDie();
  auto c = condition.Finish().ValueOrDie();
  ExpectLikeCaseWhen(v, c);
  ExpectLikeCaseWhen(v->Slice(13, 900), c->Slice(77, 900));
}

TEST_F(NullUnlessTest, SumsOnlyTheKeptRows) {
  const auto value = ArrayOf(arrow::int64(), "[1, 2, 3, null, 5]");
  const auto condition = ArrayOf(arrow::boolean(), "[true, false, null, true, true]");
  auto masked = cp::CallFunction(kNullUnlessFunction, {value, condition});
  ASSERT_TRUE(masked.ok());
  auto sum = cp::Sum(*masked);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->scalar_as<arrow::Int64Scalar>().value, 6);
  auto count = cp::Count(*masked);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->scalar_as<arrow::Int64Scalar>().value, 2);
}

}  // namespace
}  // namespace sluice::plan
