#include "plan/dictionary_kernels.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan/compute_init.h"

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;

std::shared_ptr<arrow::Array> Json(const std::shared_ptr<arrow::DataType>& type,
                                   const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

std::shared_ptr<arrow::Array> Dictionary(const std::string& codes, const std::string& values) {
  return arrow::DictionaryArray::FromArrays(Json(arrow::int32(), codes),
                                            Json(arrow::utf8(), values))
      .ValueOrDie();
}

class DictionaryKernels : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(EnsureComputeInitialized().ok()); }

  // `expression` over the batch of dictionaries (s, t) and x, rewritten, gives what the plain
  // expression gives on the decoded batch.
  void ExpectSameAsDecoded(const cp::Expression& expression,
                           const std::shared_ptr<arrow::RecordBatch>& batch) {
    std::vector<std::shared_ptr<arrow::Array>> decoded;
    arrow::FieldVector fields;
    for (int i = 0; i < batch->num_columns(); ++i) {
      auto column = batch->column(i);
      if (column->type_id() == arrow::Type::DICTIONARY) {
        column = cp::Cast(*column, arrow::utf8()).ValueOrDie();
      }
      decoded.push_back(column);
      fields.push_back(arrow::field(batch->schema()->field(i)->name(), column->type()));
    }
    auto plain = arrow::RecordBatch::Make(arrow::schema(fields), batch->num_rows(), decoded);
    auto want_bound = expression.Bind(*plain->schema()).ValueOrDie();
    auto want = cp::ExecuteScalarExpression(want_bound, cp::ExecBatch(*plain)).ValueOrDie();

    const cp::Expression rewritten = WithDictionaryMaps(expression, *batch->schema());
    auto bound = rewritten.Bind(*batch->schema());
    ASSERT_TRUE(bound.ok()) << bound.status().ToString() << " " << rewritten.ToString();
    auto got = cp::ExecuteScalarExpression(*bound, cp::ExecBatch(*batch));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(got->type()->Equals(*want.type())) << rewritten.ToString();
    EXPECT_TRUE(got->make_array()->Equals(*want.make_array()))
        << expression.ToString() << "\n got " << got->make_array()->ToString() << "\n want "
        << want.make_array()->ToString();
  }
};

TEST_F(DictionaryKernels, GiveWhatTheDecodedColumnGives) {
  auto s = Dictionary("[0, 1, null, 2, 1, 0, null, 2]", R"(["AIR", "MAIL", "SHIP"])");
  // t's dictionary has a NULL value, besides NULL codes.
  auto t = Dictionary("[1, 0, 0, null, 2, 2, 1, 0]", R"(["MAIL", null, "TRUCK"])");
  auto x = Json(arrow::int64(), "[1, 2, 3, 4, 5, 6, null, 8]");
  auto schema = arrow::schema({arrow::field("s", s->type()), arrow::field("t", t->type()),
                               arrow::field("x", arrow::int64())});
  auto batch = arrow::RecordBatch::Make(schema, 8, {s, t, x});
  const auto S = cp::field_ref("s"), T = cp::field_ref("t"), X = cp::field_ref("x");
  const std::vector<cp::Expression> cases = {
      cp::equal(S, cp::literal("MAIL")),
      cp::not_equal(T, cp::literal("MAIL")),
      cp::call("is_null", {S}),
      cp::call("is_null", {T}),
      cp::call("coalesce", {T, cp::literal("none")}),
      cp::call("binary_length", {S}),
      cp::call("binary_length", {T}),  // int32s gathered by code, a NULL among them
      cp::call("cast", {cp::call("binary_length", {T})}, cp::CastOptions::Safe(arrow::float64())),
      cp::call("cast", {cp::call("binary_length", {S})},
               cp::CastOptions::Safe(arrow::decimal128(12, 1))),
      cp::call("starts_with", {S}, cp::MatchSubstringOptions("M")),
      cp::call("is_in", {S}, cp::SetLookupOptions(Json(arrow::utf8(), R"(["AIR", "SHIP"])"))),
      cp::and_(cp::equal(S, cp::literal("AIR")), cp::less(X, cp::literal(int64_t{3}))),
      cp::or_(cp::equal(S, cp::literal("SHIP")), cp::call("is_null", {T})),
      cp::equal(S, T),  // two dictionaries: decoded, then compared
      S,                // a bare reference: decoded
  };
  for (const auto& e : cases) ExpectSameAsDecoded(e, batch);
  // A slice of the batch (codes at an offset) and its NULL codes.
  for (const auto& e : cases) ExpectSameAsDecoded(e, batch->Slice(3, 4));
  // A slice whose s codes are all valid (t's dictionary still holds a NULL value).
  for (const auto& e : cases) ExpectSameAsDecoded(e, batch->Slice(3, 3));
}

TEST_F(DictionaryKernels, ACodeOutsideItsDictionaryFails) {
  // Untrusted bytes: a code past the dictionary, built without DictionaryArray's own check.
  const auto type = arrow::dictionary(arrow::int32(), arrow::utf8());
  auto data = arrow::ArrayData::Make(
      type, 3, {nullptr, Json(arrow::int32(), "[0, 7, 1]")->data()->buffers[1]}, 0);
  data->dictionary = Json(arrow::utf8(), R"(["AIR", "MAIL"])")->data();
  auto batch = arrow::RecordBatch::Make(arrow::schema({arrow::field("s", type)}), 3,
                                        {arrow::MakeArray(data)});
  for (const auto& e : {cp::equal(cp::field_ref("s"), cp::literal("AIR")),
                        cp::call("binary_length", {cp::field_ref("s")})}) {
    auto bound = WithDictionaryMaps(e, *batch->schema()).Bind(*batch->schema()).ValueOrDie();
    auto got = cp::ExecuteScalarExpression(bound, cp::ExecBatch(*batch));
    ASSERT_FALSE(got.ok()) << e.ToString();
    EXPECT_NE(got.status().message().find("dictionary code 7 is outside"), std::string::npos)
        << got.status().ToString();
  }
}

TEST_F(DictionaryKernels, MapTheLargestPartOfOneDictionaryColumn) {
  auto schema = arrow::schema({arrow::field("s", arrow::dictionary(arrow::int32(), arrow::utf8())),
                               arrow::field("t", arrow::dictionary(arrow::int32(), arrow::utf8())),
                               arrow::field("x", arrow::int64())});
  const auto S = cp::field_ref("s"), T = cp::field_ref("t"), X = cp::field_ref("x");
  auto one = WithDictionaryMaps(
      cp::or_(cp::equal(S, cp::literal("a")), cp::equal(S, cp::literal("b"))), *schema);
  ASSERT_NE(one.call(), nullptr);
  EXPECT_EQ(one.call()->function_name, kDictionaryMapFunction);
  auto mixed =
      WithDictionaryMaps(cp::and_(cp::equal(S, cp::literal("a")), cp::less(X, T)), *schema);
  ASSERT_NE(mixed.call(), nullptr);
  EXPECT_EQ(mixed.call()->function_name, "and_kleene");
  EXPECT_EQ(mixed.call()->arguments[0].call()->function_name, kDictionaryMapFunction);
  EXPECT_EQ(mixed.call()->arguments[1].call()->arguments[1].call()->function_name, "cast");
  // A function that is not a function of its arguments alone runs per row.
  auto random = WithDictionaryMaps(
      cp::equal(S, cp::call("cast", {cp::call("random", {}, cp::RandomOptions())},
                            cp::CastOptions::Safe(arrow::utf8()))),
      *schema);
  EXPECT_EQ(random.call()->function_name, "equal");
}

TEST_F(DictionaryKernels, BatchesOfOneDictionaryAndOfEqualOnesAgree) {
  auto values = Json(arrow::utf8(), R"(["R", "A", "N"])");
  auto codes = Json(arrow::int32(), "[0, 1, 2, 0, null]");
  auto first = arrow::DictionaryArray::FromArrays(codes, values).ValueOrDie();
  // Equal values in other buffers, and other values: each gets its own answers.
  auto copy = arrow::DictionaryArray::FromArrays(codes, Json(arrow::utf8(), R"(["R", "A", "N"])"))
                  .ValueOrDie();
  auto other = arrow::DictionaryArray::FromArrays(codes, Json(arrow::utf8(), R"(["N", "R", "A"])"))
                   .ValueOrDie();
  auto schema = arrow::schema({arrow::field("f", first->type())});
  auto e = WithDictionaryMaps(cp::equal(cp::field_ref("f"), cp::literal("R")), *schema)
               .Bind(*schema)
               .ValueOrDie();
  const auto want_first = Json(arrow::boolean(), "[true, false, false, true, null]");
  const auto want_other = Json(arrow::boolean(), "[false, true, false, false, null]");
  for (int round = 0; round < 2; ++round) {
    for (const auto& [array, want] :
         std::vector<std::pair<std::shared_ptr<arrow::Array>, std::shared_ptr<arrow::Array>>>{
             {first, want_first}, {copy, want_first}, {other, want_other}}) {
      auto got = cp::ExecuteScalarExpression(e, cp::ExecBatch({array}, array->length()));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(got->make_array()->Equals(*want)) << got->make_array()->ToString();
    }
  }
}

TEST_F(DictionaryKernels, AValueThatFailsFailsOnlyWhereARowHoldsIt) {
  // "x" is in the dictionary but in no row of `held`; in `holding`, a row holds it.
  auto values = Json(arrow::utf8(), R"(["1.5", "x", "2"])");
  auto held = arrow::DictionaryArray::FromArrays(Json(arrow::int32(), "[0, 2, null, 0]"), values)
                  .ValueOrDie();
  auto holding =
      arrow::DictionaryArray::FromArrays(Json(arrow::int32(), "[0, 1]"), values).ValueOrDie();
  auto schema = arrow::schema({arrow::field("s", held->type())});
  const auto cast =
      cp::call("cast", {cp::field_ref("s")}, cp::CastOptions::Safe(arrow::decimal128(10, 2)));
  auto e =
      WithDictionaryMaps(cp::greater(cast, cp::literal(std::make_shared<arrow::Decimal128Scalar>(
                                               arrow::Decimal128(175), arrow::decimal128(10, 2)))),
                         *schema)
          .Bind(*schema)
          .ValueOrDie();
  ASSERT_EQ(e.call()->function_name, kDictionaryMapFunction);
  for (int round = 0; round < 2; ++round) {  // the second from the cached decision
    auto got = cp::ExecuteScalarExpression(e, cp::ExecBatch({held}, held->length()));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(got->make_array()->Equals(*Json(arrow::boolean(), "[false, true, null, false]")))
        << got->make_array()->ToString();
    auto failed = cp::ExecuteScalarExpression(e, cp::ExecBatch({holding}, holding->length()));
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.status().message().find("x"), std::string::npos) << failed.status().ToString();
  }
}

TEST_F(DictionaryKernels, InternedIdsGroupAsTheStringsAndLookBack) {
  const auto options = MakeInternOptions();
  auto plain = Json(arrow::utf8(), R"(["b", null, "a", "b", "c"])");
  auto coded = Dictionary("[2, 0, null, 1, 0]", R"(["a", "c", "b"])");
  auto ids = cp::CallFunction(kInternFunction, {plain}, options.get()).ValueOrDie();
  EXPECT_TRUE(ids.make_array()->Equals(*Json(arrow::int32(), "[0, null, 1, 0, 2]")))
      << ids.make_array()->ToString();
  // Through a dictionary, per value: the same ids for the same strings.
  auto schema = arrow::schema({arrow::field("s", coded->type())});
  auto e = WithDictionaryMaps(cp::call(kInternFunction, {cp::field_ref("s")}, options), *schema)
               .Bind(*schema)
               .ValueOrDie();
  ASSERT_EQ(e.call()->function_name, kDictionaryMapFunction);
  auto coded_ids = cp::ExecuteScalarExpression(e, cp::ExecBatch({coded}, 5)).ValueOrDie();
  EXPECT_TRUE(coded_ids.make_array()->Equals(*Json(arrow::int32(), "[0, 1, null, 2, 1]")))
      << coded_ids.make_array()->ToString();
  auto back = cp::CallFunction(kInternLookupFunction, {coded_ids}, options.get()).ValueOrDie();
  EXPECT_TRUE(back.make_array()->Equals(*Json(arrow::utf8(), R"(["b", "a", null, "c", "a"])")))
      << back.make_array()->ToString();
  // Another interner knows none of these ids.
  auto other = cp::CallFunction(kInternLookupFunction, {coded_ids}, MakeInternOptions().get());
  EXPECT_FALSE(other.ok());
}

TEST_F(DictionaryKernels, InternedIdsThatAreTheCodesShareTheirBuffer) {
  const auto options = MakeInternOptions();
  auto first = Dictionary("[2, 0, 1, 1, 0]", R"(["x", "y", "z"])");
  auto second = Dictionary("[0, 1, 1]", R"(["z", "x"])");
  auto schema = arrow::schema({arrow::field("s", first->type())});
  auto e = WithDictionaryMaps(cp::call(kInternFunction, {cp::field_ref("s")}, options), *schema)
               .Bind(*schema)
               .ValueOrDie();
  auto ids = [&](const std::shared_ptr<arrow::Array>& codes) {
    return cp::ExecuteScalarExpression(e, cp::ExecBatch({codes}, codes->length()))
        .ValueOrDie()
        .make_array();
  };
  // The first dictionary's values are interned in order, so its ids are its codes.
  auto first_ids = ids(first);
  EXPECT_TRUE(first_ids->Equals(*Json(arrow::int32(), "[2, 0, 1, 1, 0]"))) << first_ids->ToString();
  EXPECT_EQ(first_ids->data()->buffers[1]->data(), first->data()->buffers[1]->data());
  auto sliced = ids(first->Slice(1, 4));
  EXPECT_TRUE(sliced->Equals(*Json(arrow::int32(), "[0, 1, 1, 0]"))) << sliced->ToString();
  // Another order of known values: ids copied through the mapping.
  auto second_ids = ids(second);
  EXPECT_TRUE(second_ids->Equals(*Json(arrow::int32(), "[2, 0, 0]"))) << second_ids->ToString();
  EXPECT_NE(second_ids->data()->buffers[1]->data(), second->data()->buffers[1]->data());
}

}  // namespace
}  // namespace sluice::plan
