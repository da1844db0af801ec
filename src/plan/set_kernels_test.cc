#include "plan/set_kernels.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "plan/compute_init.h"

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;

class SetKernels : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(EnsureComputeInitialized().ok()); }
};

template <typename ArrowType>
std::shared_ptr<arrow::Array> Make(const std::vector<std::optional<typename ArrowType::c_type>>& v,
                                   const std::shared_ptr<arrow::DataType>& type) {
  arrow::NumericBuilder<ArrowType> b;
  for (const auto& x : v) EXPECT_TRUE((x ? b.Append(*x) : b.AppendNull()).ok());
  return b.Finish().ValueOrDie()->View(type).ValueOrDie();
}

// Rows around each value of `set` (one below, it, one above), the type's extremes, 0, NULLs and
// random values near the set, as `type`; the rewrite of is_in of them, under each of Arrow's
// NULL behaviours, answers as Arrow's is_in, whole, sliced and as a scalar.
template <typename ArrowType>
void ExpectAnswersAsArrow(const std::vector<typename ArrowType::c_type>& set,
                          const std::shared_ptr<arrow::DataType>& type) {
  using T = typename ArrowType::c_type;
  using Limits = std::numeric_limits<T>;
  std::vector<std::optional<T>> rows = {Limits::min(), Limits::max(), T{0}, std::nullopt};
  std::mt19937_64 rng(static_cast<uint64_t>(set.front()) ^ type->id());
  for (const T v : set) {
    rows.push_back(v);
    if (v != Limits::min()) rows.push_back(static_cast<T>(v - 1));
    if (v != Limits::max()) rows.push_back(static_cast<T>(v + 1));
    // Near v, wrapping past the type's ends (in its unsigned twin: a signed overflow is UB).
    using U = std::make_unsigned_t<T>;
    for (int i = 0; i < 20; ++i) {
      rows.push_back(static_cast<T>(static_cast<U>(static_cast<U>(v) + rng() % 64)));
      rows.push_back(static_cast<T>(static_cast<U>(static_cast<U>(v) - rng() % 64)));
      if (i % 5 == 0) rows.push_back(std::nullopt);
    }
  }
  std::vector<std::optional<T>> values(set.begin(), set.end());
  const auto value_set = Make<ArrowType>(values, type);
  ASSERT_TRUE(IntSetIsDense(value_set, *type)) << type->ToString();
  const auto input = Make<ArrowType>(rows, type);
  const auto schema = arrow::schema({arrow::field("x", type)});
  for (const auto behavior :
       {cp::SetLookupOptions::MATCH, cp::SetLookupOptions::SKIP, cp::SetLookupOptions::EMIT_NULL,
        cp::SetLookupOptions::INCONCLUSIVE}) {
    const cp::SetLookupOptions options(value_set, behavior);
    const cp::Expression arrow_in = cp::call("is_in", {cp::field_ref("x")}, options);
    const cp::Expression ours = WithSetKernels(arrow_in, *schema);
    const bool not_null =
        behavior == cp::SetLookupOptions::MATCH || behavior == cp::SetLookupOptions::SKIP;
    ASSERT_EQ(ours.call()->function_name, not_null ? kIntInFunction : kIntInOrNullFunction);
    for (const auto& in : {input, input->Slice(3), input->Slice(5, input->length() - 9)}) {
      const cp::ExecBatch batch({in}, in->length());
      auto want = cp::ExecuteScalarExpression(arrow_in.Bind(*schema).ValueOrDie(), batch);
      auto got = cp::ExecuteScalarExpression(ours.Bind(*schema).ValueOrDie(), batch);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(got->make_array()->Equals(*want->make_array()))
          << type->ToString() << " behaviour " << behavior << ":\n"
          << in->ToString() << "\n"
          << got->make_array()->ToString() << "\n"
          << want->make_array()->ToString();
    }
    for (int64_t i = 0; i < input->length(); ++i) {
      const arrow::Datum scalar(input->GetScalar(i).ValueOrDie());
      auto want = cp::CallFunction("is_in", {scalar}, &options);
      auto got = cp::CallFunction(ours.call()->function_name, {scalar}, &options);
      ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
      EXPECT_TRUE(got->scalar()->Equals(*want->scalar()))
          << type->ToString() << " row " << i << ": " << got->scalar()->ToString();
    }
  }
  // The set itself, as a join filters its probe rows with it (exec/join_gate.h): Test at a byte
  // boundary and off one, and Refine of a random mask, each against Arrow's is_in.
  const std::optional<IntBitSet> bits = IntBitSet::Make(value_set, *type);
  ASSERT_TRUE(bits.has_value());
  const cp::SetLookupOptions match(value_set, cp::SetLookupOptions::MATCH);
  for (const auto& in : {input, input->Slice(3), input->Slice(5, input->length() - 9)}) {
    const auto want = std::static_pointer_cast<arrow::BooleanArray>(
        cp::CallFunction("is_in", {in}, &match).ValueOrDie().make_array());
    const arrow::ArraySpan span(*in->data());
    const int64_t n = in->length();
    for (const int64_t offset : {0, 3}) {
      std::vector<uint8_t> out((offset + n + 7) / 8, 0xA5);
      bits->Test(span, out.data(), offset);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(arrow::bit_util::GetBit(out.data(), offset + i), want->Value(i))
            << type->ToString() << " Test at offset " << offset << ", row " << i;
      }
    }
    std::vector<uint8_t> mask((n + 7) / 8);
    for (auto& byte : mask) byte = static_cast<uint8_t>(rng());
    const std::vector<uint8_t> before = mask;
    bits->Refine(span, mask.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(arrow::bit_util::GetBit(mask.data(), i),
                arrow::bit_util::GetBit(before.data(), i) && want->Value(i))
          << type->ToString() << " Refine, row " << i;
    }
  }
}

TEST_F(SetKernels, AnswersAsArrowIsInAtEveryWidthAndEdge) {
  ExpectAnswersAsArrow<arrow::Int8Type>({-128, -127, -100}, arrow::int8());
  ExpectAnswersAsArrow<arrow::Int8Type>({-3, 0, 5, 64, 127}, arrow::int8());
  ExpectAnswersAsArrow<arrow::Int16Type>({-32768, 100, 32767}, arrow::int16());
  ExpectAnswersAsArrow<arrow::Int32Type>({7}, arrow::int32());
  ExpectAnswersAsArrow<arrow::Int32Type>({-1000, 17, 5000, 60000}, arrow::int32());
  ExpectAnswersAsArrow<arrow::Int64Type>({INT64_MAX - 70, INT64_MAX}, arrow::int64());
  ExpectAnswersAsArrow<arrow::Int64Type>({INT64_MIN, INT64_MIN + 10}, arrow::int64());
  ExpectAnswersAsArrow<arrow::Int64Type>({1, 63, 64, 65, 65000, 40000}, arrow::int64());
  ExpectAnswersAsArrow<arrow::UInt8Type>({0, 255}, arrow::uint8());
  ExpectAnswersAsArrow<arrow::UInt16Type>({1, 65535}, arrow::uint16());
  ExpectAnswersAsArrow<arrow::UInt32Type>({UINT32_MAX - 3, UINT32_MAX}, arrow::uint32());
  ExpectAnswersAsArrow<arrow::UInt64Type>({UINT64_MAX - 100, UINT64_MAX}, arrow::uint64());
  ExpectAnswersAsArrow<arrow::UInt64Type>({0, 3}, arrow::uint64());
  ExpectAnswersAsArrow<arrow::Int32Type>({10957, 10958, 11000}, arrow::date32());
}

TEST_F(SetKernels, OtherSetsKeepArrowsIsIn) {
  const auto schema = arrow::schema({arrow::field("x", arrow::int64())});
  auto name = [&](const arrow::Datum& set) {
    return WithSetKernels(cp::call("is_in", {cp::field_ref("x")}, cp::SetLookupOptions(set)),
                          *schema)
        .call()
        ->function_name;
  };
  auto ints = [](const std::vector<std::optional<int64_t>>& v) {
    return Make<arrow::Int64Type>(v, arrow::int64());
  };
  EXPECT_EQ(name(ints({1, 2, 3})), kIntInFunction);
  EXPECT_EQ(name(ints({1, std::nullopt, 3})), "is_in");    // a NULL in the set
  EXPECT_EQ(name(ints({})), "is_in");                      // empty
  EXPECT_EQ(name(ints({0, int64_t{1} << 30})), "is_in");   // sparse: a 128 MiB bitmap
  EXPECT_EQ(name(ints({INT64_MIN, INT64_MAX})), "is_in");  // the whole range
  EXPECT_EQ(name(Make<arrow::Int32Type>({1, 2}, arrow::int32())), "is_in");  // another type
  EXPECT_EQ(name(ints({0, 65535})), kIntInFunction);  // small enough whatever its size
  EXPECT_EQ(name(ints({0, 65536})), "is_in");         // past 1,024 bits a value
  const auto strings = arrow::schema({arrow::field("x", arrow::utf8())});
  auto text_set = arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["a", "b"])").ValueOrDie();
  EXPECT_EQ(WithSetKernels(cp::call("is_in", {cp::field_ref("x")}, cp::SetLookupOptions(text_set)),
                           *strings)
                .call()
                ->function_name,
            "is_in");
  // A chunked set: its chunks are one set.
  auto chunked =
      std::make_shared<arrow::ChunkedArray>(arrow::ArrayVector{ints({5, 9}), ints({7, 1000})});
  EXPECT_EQ(name(chunked), kIntInFunction);
  const arrow::Datum in = ints({5, 6, 7, 1000, 1001, std::nullopt});
  const cp::SetLookupOptions options(chunked, cp::SetLookupOptions::EMIT_NULL);
  auto got = cp::CallFunction(kIntInOrNullFunction, {in}, &options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->make_array()->ToString(),
            arrow::json::ArrayFromJSONString(arrow::boolean(),
                                             "[true, false, true, true, "
                                             "false, null]")
                .ValueOrDie()
                ->ToString());
  // The functions refuse a set the rewrite would not give them.
  const cp::SetLookupOptions sparse(ints({0, int64_t{1} << 40}));
  auto refused = cp::CallFunction(kIntInFunction, {in}, &sparse);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("internal"), std::string::npos);
}

}  // namespace
}  // namespace sluice::plan
