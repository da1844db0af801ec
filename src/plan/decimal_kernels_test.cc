#include "plan/decimal_kernels.h"
#include "plan/exact_sum.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <arrow/compute/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "plan/compute_init.h"

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;
namespace ac = arrow::acero;

std::shared_ptr<arrow::Array> Json(const std::shared_ptr<arrow::DataType>& type,
                                   const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

// Random decimals of `digits` digits (unscaled), with about one NULL in seven.
std::shared_ptr<arrow::Array> RandomDecimals(int32_t precision, int32_t scale, int64_t n,
                                             int digits, uint32_t seed) {
  std::mt19937_64 rng(seed);
  int64_t bound = 1;
  for (int i = 0; i < digits; ++i) bound *= 10;
  std::uniform_int_distribution<int64_t> value(-bound + 1, bound - 1);
  arrow::Decimal128Builder b(arrow::decimal128(precision, scale));
  for (int64_t i = 0; i < n; ++i) {
    if (rng() % 7 == 0) {
      EXPECT_TRUE(b.AppendNull().ok());
    } else {
      EXPECT_TRUE(b.Append(arrow::Decimal128(value(rng))).ok());
    }
  }
  return b.Finish().ValueOrDie();
}

// Each of `ops` (Arrow's function, ours) on each pair of `operands` gives Arrow's result and type.
void ExpectSameAsArrow(const std::vector<std::pair<std::string, std::string>>& ops,
                       const std::vector<std::pair<arrow::Datum, arrow::Datum>>& operands) {
  for (const auto& [arrow_name, ours] : ops) {
    for (const auto& [l, r] : operands) {
      auto want = cp::CallFunction(arrow_name, {l, r});
      auto got = cp::CallFunction(ours, {l, r});
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(got->type()->Equals(*want->type())) << ours;
      EXPECT_TRUE(got->Equals(*want)) << ours << ": " << got->ToString();
    }
  }
}

// Five values of each integer type: NULLs, zero, and the type's extremes.
std::vector<std::pair<std::shared_ptr<arrow::DataType>, const char*>> IntegerColumns() {
  return {{arrow::int8(), "[1, null, -128, 127, 0]"},
          {arrow::int16(), "[1, null, -32768, 32767, 0]"},
          {arrow::int32(), "[79, null, -2147483648, 2147483647, 0]"},
          {arrow::int64(), "[79, null, -9223372036854775808, 9223372036854775807, 0]"},
          {arrow::uint8(), "[1, null, 255, 0, 7]"},
          {arrow::uint16(), "[1, null, 65535, 0, 7]"},
          {arrow::uint32(), "[1, null, 4294967295, 0, 7]"},
          {arrow::uint64(), "[1, null, 18446744073709551615, 0, 7]"}};
}

class DecimalKernels : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(EnsureComputeInitialized().ok()); }
};

TEST_F(DecimalKernels, ArithmeticMatchesArrowOnArraysSlicesAndScalars) {
  const auto a = RandomDecimals(15, 2, 1000, 12, 1);
  const auto b = RandomDecimals(12, 2, 1000, 10, 2);
  const auto c = RandomDecimals(7, 4, 1000, 6, 3);
  const arrow::Datum scalar(
      std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(-125), arrow::decimal128(3, 2)));
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"add_checked", kDecimalAddFunction},
      {"subtract_checked", kDecimalSubtractFunction},
      {"multiply_checked", kDecimalMultiplyFunction}};
  const std::vector<std::pair<arrow::Datum, arrow::Datum>> operands = {
      {a, b}, {a->Slice(3, 900), b->Slice(7, 900)}, {scalar, a}, {b, scalar}};
  ExpectSameAsArrow(ops, operands);
  // Products of other scales, as Arrow types them.
  auto want = cp::CallFunction("multiply_checked", {a, c});
  auto got = cp::CallFunction(kDecimalMultiplyFunction, {a, c});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->Equals(*want));
  // Operands past 64 bits (up to 22 digits), which take the full 128-bit multiply, beside ones
  // within 64 bits, which take one 64-bit multiply.
  const arrow::Datum ten_billion(std::make_shared<arrow::Decimal128Scalar>(
      arrow::Decimal128(10'000'000'000LL), arrow::decimal128(11, 0)));
  const auto big = cp::CallFunction("multiply_checked", {a, ten_billion}).ValueOrDie().make_array();
  ExpectSameAsArrow({{"multiply_checked", kDecimalMultiplyFunction}},
                    {{big, c}, {c, big}, {big->Slice(1, 500), c->Slice(2, 500)}});
  // Quotients, with Arrow's scaling of the dividend, of one scale and of others either way
  // round, negative values truncated toward zero.
  const arrow::Datum divisor(
      std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(-3), arrow::decimal128(1, 0)));
  ExpectSameAsArrow(
      {{"divide_checked", kDecimalDivideFunction}, {"divide", kDecimalDivideFunction}},
      {{a, b},
       {a->Slice(3, 900), b->Slice(7, 900)},
       {a, c},
       {c, a},
       {scalar, a},
       {b, scalar},
       {a, divisor}});
}

TEST_F(DecimalKernels, DivisionByAValidZeroFailsAndByANullSlotsZeroDoesNot) {
  const auto type = arrow::decimal128(10, 2);
  const auto x = Json(type, R"(["10.00", "-7.50", null, "1.00"])");
  const auto zero_at_1 = Json(type, R"(["3.00", "0.00", "0.00", "0.00"])");
  auto failed = cp::CallFunction(kDecimalDivideFunction, {x, zero_at_1});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("divide by zero"), std::string::npos)
      << failed.status().ToString();
  // Zeros only where a side is NULL (the dividend at 2, the divisor's slot at 1 masked).
  auto data = zero_at_1->data()->Copy();
  auto validity = arrow::AllocateEmptyBitmap(4).ValueOrDie();
  arrow::bit_util::SetBit(validity->mutable_data(), 0);
  arrow::bit_util::SetBit(validity->mutable_data(), 2);
  data->buffers[0] = validity;
  data->null_count = 2;
  const auto y = Json(type, R"(["3.00", null, "0.00", null])");
  auto masked = cp::CallFunction(kDecimalDivideFunction, {x, arrow::MakeArray(data)});
  ASSERT_TRUE(masked.ok()) << masked.status().ToString();
  auto want = cp::CallFunction("divide", {x, y});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_TRUE(masked->Equals(*want)) << masked->ToString();
  // A zero scalar divisor of rows that are all NULL is no error either; of a valid row it is.
  const arrow::Datum zero(
      std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(0), arrow::decimal128(1, 0)));
  EXPECT_TRUE(cp::CallFunction(kDecimalDivideFunction, {Json(type, "[null, null]"), zero}).ok());
  EXPECT_FALSE(cp::CallFunction(kDecimalDivideFunction, {x, zero}).ok());
  // A dividend past its type's digits (an untrusted file's) that scaled passes 128 bits fails
  // rather than give a wrong quotient; under a NULL it does not.
  arrow::Decimal128Builder b(arrow::decimal128(18, 0));
  ASSERT_TRUE(b.Append(arrow::Decimal128(/*high=*/int64_t{1} << 62, /*low=*/0)).ok());
  ASSERT_TRUE(b.Append(arrow::Decimal128(3)).ok());
  auto wild = b.Finish().ValueOrDie();
  const auto two = Json(arrow::decimal128(1, 0), R"(["2", "2"])");
  auto overflow = cp::CallFunction(kDecimalDivideFunction, {wild, two});
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.status().message().find("overflow in decimal divide"), std::string::npos)
      << overflow.status().ToString();
  auto under_null = cp::CallFunction(kDecimalDivideFunction,
                                     {wild, Json(arrow::decimal128(1, 0), R"([null, "2"])")});
  ASSERT_TRUE(under_null.ok()) << under_null.status().ToString();
  EXPECT_EQ(under_null->make_array()->GetScalar(1).ValueOrDie()->ToString(), "1.5000");
}

TEST_F(DecimalKernels, ComparisonsMatchArrowOnArraysSlicesAndScalars) {
  // One scale, other precisions; values often equal so that every outcome occurs.
  const auto a = RandomDecimals(15, 2, 1000, 1, 6);
  const auto b = RandomDecimals(4, 2, 1000, 1, 7);
  const arrow::Datum scalar(
      std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(3), arrow::decimal128(3, 2)));
  const arrow::Datum null_scalar(arrow::MakeNullScalar(arrow::decimal128(3, 2)));
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"equal", kDecimalEqualFunction},     {"not_equal", kDecimalNotEqualFunction},
      {"less", kDecimalLessFunction},       {"less_equal", kDecimalLessEqualFunction},
      {"greater", kDecimalGreaterFunction}, {"greater_equal", kDecimalGreaterEqualFunction}};
  const std::vector<std::pair<arrow::Datum, arrow::Datum>> operands = {
      {a, b}, {a->Slice(5, 990), b->Slice(1, 990)}, {scalar, a}, {b, scalar}, {a, null_scalar}};
  ExpectSameAsArrow(ops, operands);
}

TEST_F(DecimalKernels, OverflowOfAValidRowFailsAndOfANullSlotDoesNot) {
  const auto type = arrow::decimal128(38, 0);
  const std::string big = "\"99999999999999999999999999999999999999\"";
  const auto huge = Json(type, "[" + big + ", \"1\"]");
  const auto two = Json(arrow::decimal128(1, 0), "[\"2\", \"2\"]");
  // The precision check fails at typing (38 + 1 + 1 digits), as Arrow's does.
  auto typed = cp::CallFunction(kDecimalMultiplyFunction, {huge, two});
  ASSERT_FALSE(typed.ok());
  EXPECT_NE(typed.status().message().find("more than decimal128's 38"), std::string::npos);

  // Values past their declared precision (untrusted files can hold them) overflow at run time:
  // 2^64 squared does not fit 128 bits.
  arrow::Decimal128Builder b(arrow::decimal128(18, 0));
  ASSERT_TRUE(b.Append(arrow::Decimal128(/*high=*/1, /*low=*/0)).ok());
  ASSERT_TRUE(b.Append(arrow::Decimal128(3)).ok());
  auto x = b.Finish().ValueOrDie();
  auto overflow = cp::CallFunction(kDecimalMultiplyFunction, {x, x});
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.status().message().find("overflow in decimal multiply"), std::string::npos)
      << overflow.status().ToString();
  // The same overflow in a row that is NULL on the other side is not an error.
  auto mask = Json(arrow::decimal128(18, 0), "[null, \"3\"]");
  auto masked = cp::CallFunction(kDecimalMultiplyFunction, {x, mask});
  ASSERT_TRUE(masked.ok()) << masked.status().ToString();
  EXPECT_TRUE(masked->make_array()->IsNull(0));
  EXPECT_EQ(masked->make_array()->GetScalar(1).ValueOrDie()->ToString(), "9");
}

// Runs an aggregate over `table` through Acero, as the executor does.
arrow::Result<std::shared_ptr<arrow::Table>> Aggregate(std::shared_ptr<arrow::Table> table,
                                                       const std::string& function,
                                                       std::vector<arrow::FieldRef> keys,
                                                       uint32_t min_count = 1,
                                                       int64_t batch_rows = 64) {
  const bool grouped = !keys.empty();
  auto options = std::make_shared<cp::ScalarAggregateOptions>(/*skip_nulls=*/true, min_count);
  std::vector<cp::Aggregate> aggs = {
      {(grouped ? "hash_" : "") + function, options, arrow::FieldRef("v"), "s"}};
  ac::Declaration plan = ac::Declaration::Sequence(
      {{"table_source", ac::TableSourceNodeOptions(std::move(table), batch_rows)},
       {"aggregate", ac::AggregateNodeOptions(std::move(aggs), std::move(keys))}});
  return ac::DeclarationToTable(std::move(plan), /*use_threads=*/true);
}

// Our sum of `v`, grouped by `keys` random keys and not, gives Arrow's.
void ExpectSumsMatchArrow(const std::shared_ptr<arrow::Array>& v, int keys,
                          int64_t batch_rows = 64) {
  const int64_t n = v->length();
  arrow::Int32Builder kb;
  std::mt19937 rng(5);
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(kb.Append(static_cast<int32_t>(rng() % keys)).ok());
  auto k = kb.Finish().ValueOrDie();
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", v->type())}), {k, v});
  for (const bool grouped : {false, true}) {
    std::vector<arrow::FieldRef> keys;
    if (grouped) keys.emplace_back("k");
    auto want = Aggregate(table, "sum", keys, 1, batch_rows);
    auto got = Aggregate(table, kExactSumFunction, keys, 1, batch_rows);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    auto sort = [](const std::shared_ptr<arrow::Table>& t) {
      if (t->num_columns() < 2) return t;
      auto order = cp::SortIndices(t, cp::SortOptions({cp::SortKey("k")})).ValueOrDie();
      return cp::Take(t, order).ValueOrDie().table();
    };
    auto w = sort(*want), g = sort(*got);
    EXPECT_TRUE(g->schema()->Equals(*w->schema())) << g->schema()->ToString();
    EXPECT_TRUE(g->Equals(*w)) << g->ToString() << "\n" << w->ToString();
  }
}

TEST_F(DecimalKernels, SumsMatchArrowGroupedAndNot) {
  const int64_t n = 5001;  // batches of 64 and one of 9: an odd tail
  const auto with_nulls = RandomDecimals(15, 2, n, 12, 4);
  const std::shared_ptr<arrow::Array> no_nulls =
      cp::CallFunction("coalesce",
                       {with_nulls, arrow::Datum(std::make_shared<arrow::Decimal128Scalar>(
                                        arrow::Decimal128(7), with_nulls->type()))})
          .ValueOrDie()
          .make_array();
  // 37 keys: few groups; 300: many.
  for (const auto& [v, keys] : {std::pair{with_nulls, 37}, std::pair{no_nulls, 37},
                                std::pair{with_nulls, 300}, std::pair{no_nulls, 300}})
    ExpectSumsMatchArrow(v, keys);
  // Batches of 999 rows (odd offsets) and 4 keys: the striped sum of few groups, over runs of
  // valid rows, of NULLs, and of both mixed.
  const auto all_null = arrow::MakeArrayOfNull(with_nulls->type(), 300).ValueOrDie();
  const auto runs = arrow::Concatenate({no_nulls->Slice(0, 2000), with_nulls->Slice(2000, 700),
                                        all_null, no_nulls->Slice(2700)})
                        .ValueOrDie();
  for (const auto& v : {with_nulls, no_nulls, runs}) ExpectSumsMatchArrow(v, 4, 999);
}

// `array` (decimal128 of at most 18 digits) as decimal64, as the executor reads Parquet decimals
// (exec/narrow_decimals.h).
arrow::Datum Narrow(const arrow::Datum& value) {
  const auto& t = static_cast<const arrow::DecimalType&>(*value.type());
  return cp::Cast(value, arrow::decimal64(t.precision(), t.scale())).ValueOrDie();
}

TEST_F(DecimalKernels, Decimal64OperandsGiveWhatTheirDecimal128ValuesGive) {
  const arrow::Datum a = RandomDecimals(15, 2, 1000, 12, 11);
  const arrow::Datum b = RandomDecimals(12, 2, 1000, 10, 12);
  const arrow::Datum c = RandomDecimals(7, 4, 1000, 6, 13);
  const arrow::Datum scalar(
      std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(-125), arrow::decimal128(3, 2)));
  const arrow::Datum null_scalar(arrow::MakeNullScalar(arrow::decimal128(3, 2)));
  const arrow::Datum sliced_a = a.make_array()->Slice(3, 900);
  const arrow::Datum sliced_b = b.make_array()->Slice(7, 900);
  // Each pair with either operand, or both, as decimal64.
  const std::vector<std::pair<arrow::Datum, arrow::Datum>> same_scale = {
      {a, b}, {sliced_a, sliced_b}, {scalar, a}, {b, scalar}, {a, null_scalar}};
  for (const char* function :
       {kDecimalAddFunction, kDecimalSubtractFunction, kDecimalMultiplyFunction,
        kDecimalDivideFunction, kDecimalEqualFunction, kDecimalNotEqualFunction,
        kDecimalLessFunction, kDecimalLessEqualFunction, kDecimalGreaterFunction,
        kDecimalGreaterEqualFunction}) {
    auto pairs = same_scale;
    const std::string name = function;
    if (name == kDecimalMultiplyFunction || name == kDecimalDivideFunction) {
      pairs.push_back({a, c});
      pairs.push_back({c, a});
    }
    for (const auto& [l, r] : pairs) {
      auto want = cp::CallFunction(function, {l, r});
      ASSERT_TRUE(want.ok()) << function << ": " << want.status().ToString();
      for (const auto& [nl, nr] :
           {std::pair{Narrow(l), r}, std::pair{l, Narrow(r)}, std::pair{Narrow(l), Narrow(r)}}) {
        auto got = cp::CallFunction(function, {nl, nr});
        ASSERT_TRUE(got.ok()) << function << ": " << got.status().ToString();
        EXPECT_TRUE(got->type()->Equals(*want->type()))
            << function << ": " << got->type()->ToString();
        EXPECT_TRUE(got->Equals(*want)) << function;
      }
    }
  }
  // A cast to decimal128 widens, to a larger scale scales, and checks digits as of decimal128.
  for (const auto& to : {arrow::decimal128(15, 2), arrow::decimal128(20, 4)}) {
    const auto options = cp::CastOptions::Safe(to);
    auto want = cp::CallFunction(kDecimalFitFunction, {a}, &options);
    auto got = cp::CallFunction(kDecimalFitFunction, {Narrow(a)}, &options);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(got->type()->Equals(*to));
    EXPECT_TRUE(got->Equals(*want));
  }
  const auto wide = Json(arrow::decimal128(18, 0), R"(["100000000000000000", null, "-3"])");
  const auto fit17 = cp::CastOptions::Safe(arrow::decimal128(17, 0));
  auto too_long = cp::CallFunction(kDecimalFitFunction, {Narrow(wide)}, &fit17);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("decimal value 100000000000000000 does not fit in "
                                             "decimal128(17, 0)"),
            std::string::npos)
      << too_long.status().ToString();
  // Values past their declared digits (an untrusted file's) pass a cast that neither scales nor
  // narrows unchecked, as decimal128's do, and fail one that narrows.
  const auto past = Narrow(Json(arrow::decimal128(9, 2), R"(["1234567.89", "-3.00"])"));
  const auto loose = arrow::Datum(arrow::ArrayData::Make(
      arrow::decimal64(5, 2), 2, past.array()->buffers, past.array()->null_count));
  const auto same = cp::CastOptions::Safe(arrow::decimal128(7, 2));
  auto unchecked = cp::CallFunction(kDecimalFitFunction, {loose}, &same);
  ASSERT_TRUE(unchecked.ok()) << unchecked.status().ToString();
  EXPECT_EQ(unchecked->make_array()->GetScalar(0).ValueOrDie()->ToString(), "1234567.89");
  const auto fewer = cp::CastOptions::Safe(arrow::decimal128(4, 2));
  EXPECT_FALSE(cp::CallFunction(kDecimalFitFunction, {loose}, &fewer).ok());
  // Sums, grouped (few groups and many) and not, with NULLs and batches of odd lengths.
  const auto v = a.make_array();
  arrow::Int32Builder kb;
  std::mt19937 rng(9);
  for (int64_t i = 0; i < v->length(); ++i) {
    ASSERT_TRUE(kb.Append(static_cast<int32_t>(rng() % 300)).ok());
  }
  const auto k = kb.Finish().ValueOrDie();
  auto few = cp::CallFunction("bit_wise_and", {k, arrow::Datum(int32_t{3})}).ValueOrDie();
  for (const auto& keys : {arrow::Datum(k), few}) {
    for (const bool grouped : {false, true}) {
      for (const int64_t batch_rows : {64, 999}) {
        std::vector<arrow::FieldRef> by;
        if (grouped) by.emplace_back("k");
        auto table = [&](const arrow::Datum& values) {
          return arrow::Table::Make(
              arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", values.type())}),
              {keys.make_array(), values.make_array()});
        };
        auto want = Aggregate(table(v), kExactSumFunction, by, 1, batch_rows);
        auto got = Aggregate(table(Narrow(v)), kExactSumFunction, by, 1, batch_rows);
        ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
        auto sorted = [](const std::shared_ptr<arrow::Table>& t) {
          if (t->num_columns() < 2) return t;
          auto order = cp::SortIndices(t, cp::SortOptions({cp::SortKey("k")})).ValueOrDie();
          return cp::Take(t, order).ValueOrDie().table();
        };
        EXPECT_TRUE(sorted(*got)->Equals(*sorted(*want))) << (*got)->ToString();
      }
    }
  }
  // Sums past 64 bits in few groups (which add 8-byte values in 64-bit lanes first), positive and
  // negative: the batch is added again in 128 bits.
  arrow::Decimal128Builder huge(arrow::decimal128(18, 0));
  arrow::Int32Builder few_keys;
  for (int i = 0; i < 2000; ++i) {
    const int64_t v = (i % 3 == 0 ? -1 : 1) * 999'999'999'999'999'999LL;
    ASSERT_TRUE(huge.Append(arrow::Decimal128(v)).ok());
    ASSERT_TRUE(few_keys.Append(i % 2).ok());
  }
  const arrow::Datum huge_values = huge.Finish().ValueOrDie();
  const auto huge_keys = few_keys.Finish().ValueOrDie();
  auto huge_table = [&](const arrow::Datum& values) {
    return arrow::Table::Make(
        arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", values.type())}),
        {huge_keys, values.make_array()});
  };
  auto want = Aggregate(huge_table(huge_values), kExactSumFunction, {"k"}, 1, 999);
  auto got = Aggregate(huge_table(Narrow(huge_values)), kExactSumFunction, {"k"}, 1, 999);
  ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
  auto order = [](const std::shared_ptr<arrow::Table>& t) {
    auto indices = cp::SortIndices(t, cp::SortOptions({cp::SortKey("k")})).ValueOrDie();
    return cp::Take(t, indices).ValueOrDie().table();
  };
  EXPECT_TRUE(order(*got)->Equals(*order(*want))) << (*got)->ToString();
  // Key 1: 667 rows of 10^18 - 1 and 333 of its negative, a total no int64 holds.
  EXPECT_NE(order(*got)->ToString().find("333999999999999999666"), std::string::npos)
      << (*got)->ToString();
}

// The striped sum of few groups tracks, where min_count is at most 1, only whether a group saw a
// valid value: a group whose values are all NULL, one that sees its first valid value late, and
// one with a single valid value, for min_count 0 to 2, of decimal128 and decimal64, as Arrow's.
TEST_F(DecimalKernels, FewGroupsSumsKnowWhichGroupsSawAValue) {
  const auto type = arrow::decimal128(15, 2);
  arrow::Decimal128Builder vb(type);
  arrow::Int32Builder kb;
  for (int i = 0; i < 6000; ++i) {
    const int key = i % 4;
    // key 0: always valid; 1: valid in one row; 2: valid from row 3000; 3: never valid.
    const bool valid = key == 0 || (key == 1 && i == 4001) || (key == 2 && i >= 3000);
    ASSERT_TRUE(kb.Append(key).ok());
    ASSERT_TRUE((valid ? vb.Append(arrow::Decimal128(i * 7 - 20000)) : vb.AppendNull()).ok());
  }
  const auto k = kb.Finish().ValueOrDie();
  const arrow::Datum v = vb.Finish().ValueOrDie();
  auto table = [&](const arrow::Datum& values) {
    return arrow::Table::Make(
        arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", values.type())}),
        {k, values.make_array()});
  };
  auto sorted = [](const std::shared_ptr<arrow::Table>& t) {
    auto order = cp::SortIndices(t, cp::SortOptions({cp::SortKey("k")})).ValueOrDie();
    return cp::Take(t, order).ValueOrDie().table();
  };
  for (const uint32_t min_count : {0u, 1u, 2u}) {
    auto want = Aggregate(table(v), "sum", {"k"}, min_count, 999);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    for (const arrow::Datum& values : {v, Narrow(v)}) {
      auto got = Aggregate(table(values), kExactSumFunction, {"k"}, min_count, 999);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(sorted(*got)->Equals(*sorted(*want)))
          << "min_count " << min_count << ", " << values.type()->ToString() << ":\n"
          << sorted(*got)->ToString() << "\n"
          << sorted(*want)->ToString();
    }
  }
  // Spelled out for min_count 1: key 3 is NULL, the others are sums.
  auto got = Aggregate(table(Narrow(v)), kExactSumFunction, {"k"}, 1, 999);
  ASSERT_TRUE(got.ok());
  const auto sums = sorted(*got)->GetColumnByName("s");
  EXPECT_TRUE(sums->GetScalar(0).ValueOrDie()->is_valid);
  EXPECT_EQ(sums->GetScalar(1).ValueOrDie()->ToString(), "80.07");  // 4001 * 7 - 20000
  EXPECT_TRUE(sums->GetScalar(2).ValueOrDie()->is_valid);
  EXPECT_FALSE(sums->GetScalar(3).ValueOrDie()->is_valid);
}

TEST_F(DecimalKernels, SumOfNoValidRowsIsNullAndOverflowFails) {
  const auto type = arrow::decimal128(15, 2);
  auto nulls = arrow::Table::Make(
      arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", type)}),
      {Json(arrow::int32(), "[1, 1, 2]"), Json(type, "[null, null, \"1.50\"]")});
  auto grouped = Aggregate(nulls, kExactSumFunction, {arrow::FieldRef("k")});
  ASSERT_TRUE(grouped.ok()) << grouped.status().ToString();
  auto sums = (*grouped)->GetColumnByName("s");
  auto keys = (*grouped)->GetColumnByName("k");
  for (int64_t i = 0; i < (*grouped)->num_rows(); ++i) {
    const auto key = std::static_pointer_cast<arrow::Int32Scalar>(keys->GetScalar(i).ValueOrDie());
    const auto sum = sums->GetScalar(i).ValueOrDie();
    if (key->value == 1) {
      EXPECT_FALSE(sum->is_valid);
    } else {
      EXPECT_EQ(sum->ToString(), "1.50");
    }
  }
  // min_count = 0: a sum of nothing is 0.
  auto zero = Aggregate(nulls->Slice(0, 2), kExactSumFunction, {}, /*min_count=*/0);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ((*zero)->column(0)->GetScalar(0).ValueOrDie()->ToString(), "0.00");

  // 100 values of 37 nines pass 38 digits: an error, never a wrapped total.
  const auto wide = arrow::decimal128(38, 0);
  std::string json = "[";
  for (int i = 0; i < 100; ++i) {
    json += std::string(i ? "," : "") + "\"" + std::string(37, '9') + "\"";
  }
  json += "]";
  arrow::Int32Builder kb;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(kb.Append(i % 2).ok());
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("k", arrow::int32()), arrow::field("v", wide)}),
      {kb.Finish().ValueOrDie(), Json(wide, json)});
  for (const bool grouped_sum : {false, true}) {
    std::vector<arrow::FieldRef> keys;
    if (grouped_sum) keys.emplace_back("k");
    auto result = Aggregate(table, kExactSumFunction, keys);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.status().message().find("overflow in sum"), std::string::npos)
        << result.status().ToString();
  }
}

TEST_F(DecimalKernels, RewriteReplacesDecimalArithmeticOnlyWhereTypesAgree) {
  const auto schema = arrow::schema(
      {arrow::field("p", arrow::decimal128(15, 2)), arrow::field("d", arrow::decimal128(15, 2)),
       arrow::field("i", arrow::int64()), arrow::field("f", arrow::float64())});
  const auto one = cp::literal(
      std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(1), arrow::decimal128(1, 0)));
  auto e = cp::call("multiply_checked",
                    {cp::field_ref("p"), cp::call("subtract_checked", {one, cp::field_ref("d")})});
  auto rewritten = WithDecimalKernels(e, *schema);
  const std::string text = rewritten.ToString();
  EXPECT_NE(text.find(kDecimalMultiplyFunction), std::string::npos) << text;
  EXPECT_NE(text.find(kDecimalSubtractFunction), std::string::npos) << text;
  // Same type as Arrow's, and the same values.
  auto want = e.Bind(*schema).ValueOrDie();
  auto got = rewritten.Bind(*schema).ValueOrDie();
  EXPECT_TRUE(got.type()->Equals(*want.type()));
  auto batch = arrow::RecordBatch::Make(
      schema, 3,
      {Json(arrow::decimal128(15, 2), "[\"10.00\", null, \"-3.25\"]"),
       Json(arrow::decimal128(15, 2), "[\"0.05\", \"0.10\", \"1.50\"]"),
       Json(arrow::int64(), "[1, 2, 3]"), Json(arrow::float64(), "[1, 2, 3]")});
  auto input = cp::ExecBatch(*batch);
  auto a = cp::ExecuteScalarExpression(want, input).ValueOrDie();
  auto b = cp::ExecuteScalarExpression(got, input).ValueOrDie();
  EXPECT_TRUE(a.Equals(b)) << b.ToString();

  // A comparison with an operand of another scale: the smaller is widened, as Arrow does.
  const auto half = cp::literal(
      std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(5), arrow::decimal128(2, 1)));
  for (const char* fn : {"less", "greater_equal", "equal"}) {
    auto compare = cp::call(fn, {cp::field_ref("d"), half});
    auto ours = WithDecimalKernels(compare, *schema);
    EXPECT_NE(ours.ToString().find("sluice_decimal_"), std::string::npos) << ours.ToString();
    auto w = cp::ExecuteScalarExpression(compare.Bind(*schema).ValueOrDie(), input).ValueOrDie();
    auto g = cp::ExecuteScalarExpression(ours.Bind(*schema).ValueOrDie(), input).ValueOrDie();
    EXPECT_TRUE(w.Equals(g)) << fn << ": " << g.ToString();
  }

  // Integers and floats stay with Arrow's kernels, and so does a decimal with a float.
  for (const char* column : {"i", "f"}) {
    auto other = cp::call("add", {cp::field_ref(column), cp::field_ref(column)});
    EXPECT_EQ(WithDecimalKernels(other, *schema).ToString(), other.ToString());
  }
  auto with_float = cp::call("multiply_checked", {cp::field_ref("f"), cp::field_ref("p")});
  EXPECT_EQ(WithDecimalKernels(with_float, *schema).ToString(), with_float.ToString());
}

TEST_F(DecimalKernels, AnIntegerOperandOfADecimalIsTakenAsArrowsImplicitCastTakesIt) {
  // Arrow casts the integer to decimal128 of its type's digits, scale 0 (q14's quantity *
  // list_price); ours computes the same type and values, NULLs and extremes included.
  for (const auto& [type, json] : IntegerColumns()) {
    const auto schema =
        arrow::schema({arrow::field("q", type), arrow::field("p", arrow::decimal128(7, 2))});
    auto batch = arrow::RecordBatch::Make(
        schema, 5,
        {Json(type, json),
         Json(arrow::decimal128(7, 2), R"(["21.50", "1.00", null, "-99999.99", "0.01"])")});
    const auto q = cp::field_ref("q"), p = cp::field_ref("p");
    for (const char* fn : {"multiply_checked", "multiply", "add_checked", "subtract",
                           "divide_checked", "less", "greater_equal", "equal"}) {
      for (const auto& e : {cp::call(fn, {q, p}), cp::call(fn, {p, q})}) {
        auto ours = WithDecimalKernels(e, *schema);
        const std::string text = ours.ToString();
        EXPECT_NE(text.find("sluice_decimal_"), std::string::npos) << text;
        EXPECT_NE(text.find(kDecimalFitFunction), std::string::npos) << text;
        auto want_bound = e.Bind(*schema).ValueOrDie();
        auto got_bound = ours.Bind(*schema).ValueOrDie();
        ASSERT_TRUE(got_bound.type()->Equals(*want_bound.type()))
            << fn << " " << got_bound.type()->ToString() << " vs " << want_bound.type()->ToString();
        for (const auto& b : {batch, batch->Slice(1, 4)}) {
          auto want = cp::ExecuteScalarExpression(want_bound, cp::ExecBatch(*b));
          auto got = cp::ExecuteScalarExpression(got_bound, cp::ExecBatch(*b));
          ASSERT_EQ(want.ok(), got.ok())
              << fn << " " << type->ToString() << ": " << want.status().ToString() << " / "
              << got.status().ToString();
          if (want.ok()) {
            EXPECT_TRUE(got->Equals(*want)) << fn << ": " << got->ToString();
          }
        }
      }
    }
  }
}

TEST_F(DecimalKernels, ACastToTheSameOrALargerScaleChecksDigitsAsArrowDoes) {
  const auto schema = arrow::schema({arrow::field("x", arrow::decimal128(20, 2))});
  const auto x = cp::field_ref("x");
  auto fits = arrow::RecordBatch::Make(
      schema, 4, {Json(arrow::decimal128(20, 2), R"(["123.45", null, "-999.99", "0.00"])")});
  // A NULL slot's bytes past the target's digits are not an error.
  arrow::Decimal128Builder b(arrow::decimal128(20, 2));
  ASSERT_TRUE(b.Append(arrow::Decimal128(5)).ok());
  ASSERT_TRUE(b.Append(arrow::Decimal128::FromString("12345678901234567890").ValueOrDie()).ok());
  auto big = b.Finish().ValueOrDie();
  auto masked_data = big->data()->Copy();
  auto validity = arrow::AllocateEmptyBitmap(2).ValueOrDie();
  arrow::bit_util::SetBit(validity->mutable_data(), 0);
  masked_data->buffers[0] = validity;
  masked_data->null_count = 1;
  auto masked = arrow::RecordBatch::Make(schema, 2, {arrow::MakeArray(masked_data)});
  auto too_big = arrow::RecordBatch::Make(
      schema, 3, {Json(arrow::decimal128(20, 2), R"(["1.00", "-1000.00", null])")});

  for (const auto& to :
       {arrow::decimal128(5, 2), arrow::decimal128(25, 2), arrow::decimal128(20, 3),
        arrow::decimal128(22, 14), arrow::decimal128(38, 20)}) {
    auto e = cp::call("cast", {x}, cp::CastOptions::Safe(to));
    auto ours = WithDecimalKernels(e, *schema);
    ASSERT_NE(ours.ToString().find(kDecimalFitFunction), std::string::npos) << ours.ToString();
    auto want_bound = e.Bind(*schema).ValueOrDie();
    auto got_bound = ours.Bind(*schema).ValueOrDie();
    ASSERT_TRUE(got_bound.type()->Equals(*want_bound.type()));
    for (const auto& batch : {fits, fits->Slice(1, 3), masked}) {
      auto want = cp::ExecuteScalarExpression(want_bound, cp::ExecBatch(*batch));
      auto got = cp::ExecuteScalarExpression(got_bound, cp::ExecBatch(*batch));
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(got->Equals(*want)) << got->ToString();
    }
    // A scalar, as a literal operand is.
    auto literal = cp::call(kDecimalFitFunction,
                            {cp::literal(std::make_shared<arrow::Decimal128Scalar>(
                                arrow::Decimal128(-99999), arrow::decimal128(20, 2)))},
                            cp::CastOptions::Safe(to));
    auto one =
        cp::ExecuteScalarExpression(literal.Bind(*schema).ValueOrDie(), cp::ExecBatch(*fits));
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    EXPECT_EQ(
        one->scalar()->ToString(),
        "-999.99" + std::string(static_cast<const arrow::Decimal128Type&>(*to).scale() - 2, '0'));
  }
  // A valid value past the target's digits fails, naming the value and the type.
  auto narrow = WithDecimalKernels(
      cp::call("cast", {x}, cp::CastOptions::Safe(arrow::decimal128(5, 2))), *schema);
  auto failed =
      cp::ExecuteScalarExpression(narrow.Bind(*schema).ValueOrDie(), cp::ExecBatch(*too_big));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("-1000.00 does not fit in decimal128(5, 2)"),
            std::string::npos)
      << failed.status().ToString();
  // So does one whose digits pass the target's only once scaled, at the slice's own offset,
  // and one that passes 128 bits.
  auto scaled = WithDecimalKernels(
      cp::call("cast", {x}, cp::CastOptions::Safe(arrow::decimal128(7, 4))), *schema);
  for (const auto& [batch, value] :
       {std::make_pair(too_big, "-1000.00"), std::make_pair(too_big->Slice(1, 2), "-1000.00")}) {
    auto result =
        cp::ExecuteScalarExpression(scaled.Bind(*schema).ValueOrDie(), cp::ExecBatch(*batch));
    ASSERT_FALSE(result.ok());
    EXPECT_NE(
        result.status().message().find(std::string(value) + " does not fit in decimal128(7, 4)"),
        std::string::npos)
        << result.status().ToString();
  }
  const auto wide = arrow::schema({arrow::field("w", arrow::decimal128(38, 0))});
  auto huge = arrow::RecordBatch::Make(
      wide, 1, {Json(arrow::decimal128(38, 0), R"(["99999999999999999999999999999999999999"])")});
  auto shifted = WithDecimalKernels(
      cp::call("cast", {cp::field_ref("w")}, cp::CastOptions::Safe(arrow::decimal128(38, 10))),
      *wide);
  ASSERT_NE(shifted.ToString().find(kDecimalFitFunction), std::string::npos);
  auto wrapped =
      cp::ExecuteScalarExpression(shifted.Bind(*wide).ValueOrDie(), cp::ExecBatch(*huge));
  EXPECT_FALSE(wrapped.ok());
  // A widening past 38 places (from a negative scale) stays Arrow's.
  const auto negative = arrow::schema({arrow::field("n", arrow::decimal128(5, -3))});
  auto far =
      cp::call("cast", {cp::field_ref("n")}, cp::CastOptions::Safe(arrow::decimal128(38, 37)));
  EXPECT_EQ(WithDecimalKernels(far, *negative).ToString(), far.ToString());
  // A smaller scale, or a truncating cast, stays Arrow's.
  for (const auto& options : {cp::CastOptions::Safe(arrow::decimal128(20, 1)),
                              cp::CastOptions::Unsafe(arrow::decimal128(5, 2))}) {
    auto e = cp::call("cast", {x}, options);
    EXPECT_EQ(WithDecimalKernels(e, *schema).ToString(), e.ToString());
  }
}

TEST_F(DecimalKernels, ACastOfAnIntegerMatchesArrowAndChecksEachValue) {
  // Each integer type, with NULLs, its extremes, and a slice off its start; to scales 0, 2 and 20.
  for (const auto& [type, json] : IntegerColumns()) {
    const auto schema = arrow::schema({arrow::field("i", type)});
    auto batch = arrow::RecordBatch::Make(schema, 5, {Json(type, json)});
    for (int32_t scale : {0, 2, 10}) {
      const auto to = arrow::decimal128(20 + scale, scale);
      auto e = cp::call("cast", {cp::field_ref("i")}, cp::CastOptions::Safe(to));
      auto ours = WithDecimalKernels(e, *schema);
      ASSERT_NE(ours.ToString().find(kDecimalFitFunction), std::string::npos) << ours.ToString();
      for (const auto& b : {batch, batch->Slice(1, 4), batch->Slice(3, 2)}) {
        auto want = cp::ExecuteScalarExpression(e.Bind(*schema).ValueOrDie(), cp::ExecBatch(*b));
        auto got = cp::ExecuteScalarExpression(ours.Bind(*schema).ValueOrDie(), cp::ExecBatch(*b));
        ASSERT_TRUE(want.ok()) << want.status().ToString();
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_TRUE(got->Equals(*want)) << type->ToString() << " " << got->ToString();
        EXPECT_TRUE(got->make_array()->ValidateFull().ok());
      }
    }
  }
  // Fewer digits than the type holds: each value is checked (Arrow refuses the type outright).
  const auto schema = arrow::schema({arrow::field("i", arrow::int32())});
  const auto narrow = arrow::decimal128(5, 2);
  auto cast = WithDecimalKernels(
      cp::call("cast", {cp::field_ref("i")}, cp::CastOptions::Safe(narrow)), *schema);
  auto small = arrow::RecordBatch::Make(schema, 3, {Json(arrow::int32(), "[999, null, -999]")});
  auto fits = cp::ExecuteScalarExpression(cast.Bind(*schema).ValueOrDie(), cp::ExecBatch(*small));
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_TRUE(fits->make_array()->Equals(*Json(narrow, R"(["999.00", null, "-999.00"])")))
      << fits->make_array()->ToString();
  // A valid value past the digits fails naming it; one under a NULL does not.
  auto big = arrow::RecordBatch::Make(schema, 3, {Json(arrow::int32(), "[1, 1000, 5]")});
  auto failed = cp::ExecuteScalarExpression(cast.Bind(*schema).ValueOrDie(), cp::ExecBatch(*big));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("value 1000 of type int32 does not fit in "
                                           "decimal128(5, 2)"),
            std::string::npos)
      << failed.status().ToString();
  auto data = big->column(0)->data()->Copy();
  auto validity = arrow::AllocateEmptyBitmap(3).ValueOrDie();
  arrow::bit_util::SetBit(validity->mutable_data(), 0);
  arrow::bit_util::SetBit(validity->mutable_data(), 2);
  data->buffers[0] = validity;
  data->null_count = 1;
  auto masked = arrow::RecordBatch::Make(schema, 3, {arrow::MakeArray(data)});
  auto passed =
      cp::ExecuteScalarExpression(cast.Bind(*schema).ValueOrDie(), cp::ExecBatch(*masked));
  ASSERT_TRUE(passed.ok()) << passed.status().ToString();
  EXPECT_TRUE(passed->make_array()->Equals(*Json(narrow, R"(["1.00", null, "5.00"])")));
  // A 64-bit value times 10^30 passes 38 digits: an error, not a wrapped value.
  const auto wide = arrow::schema({arrow::field("w", arrow::int64())});
  auto huge = arrow::RecordBatch::Make(wide, 1, {Json(arrow::int64(), "[9223372036854775807]")});
  auto shifted = WithDecimalKernels(
      cp::call("cast", {cp::field_ref("w")}, cp::CastOptions::Safe(arrow::decimal128(38, 30))),
      *wide);
  ASSERT_NE(shifted.ToString().find(kDecimalFitFunction), std::string::npos);
  EXPECT_FALSE(
      cp::ExecuteScalarExpression(shifted.Bind(*wide).ValueOrDie(), cp::ExecBatch(*huge)).ok());
  // A truncating cast, or one to a negative scale, stays Arrow's.
  for (const auto& options : {cp::CastOptions::Unsafe(arrow::decimal128(5, 2)),
                              cp::CastOptions::Safe(arrow::decimal128(5, -2))}) {
    auto e = cp::call("cast", {cp::field_ref("i")}, options);
    EXPECT_EQ(WithDecimalKernels(e, *schema).ToString(), e.ToString());
  }
}

}  // namespace
}  // namespace sluice::plan
