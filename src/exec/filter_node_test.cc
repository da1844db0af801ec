#include "exec/filter_node.h"

#include <arrow/acero/api.h>
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "plan/compute_init.h"

namespace sluice::exec {
namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// The filter node's rows of `table` for `predicate`, in batches of 999 rows (so masks start
// inside a byte), on one thread.
arrow::Result<std::shared_ptr<arrow::Table>> RunFilter(const std::shared_ptr<arrow::Table>& table,
                                                       const cp::Expression& predicate) {
  ARROW_ASSIGN_OR_RAISE(
      auto filtered,
      Filtered(ac::Declaration("table_source", ac::TableSourceNodeOptions(table, /*batch=*/999)),
               predicate));
  ARROW_ASSIGN_OR_RAISE(auto got, ac::DeclarationToTable(std::move(filtered), false));
  return got->CombineChunks();
}

// The rows of `table` that Arrow's filter keeps for the whole of `predicate`.
std::shared_ptr<arrow::Table> ArrowKeeps(const std::shared_ptr<arrow::Table>& table,
                                         const cp::Expression& predicate) {
  auto mask =
      cp::ExecuteScalarExpression(predicate.Bind(*table->schema()).ValueOrDie(),
                                  cp::ExecBatch(*table->CombineChunksToBatch().ValueOrDie()))
          .ValueOrDie();
  if (mask.is_scalar()) {
    mask = arrow::MakeArrayFromScalar(*mask.scalar(), table->num_rows()).ValueOrDie();
  }
  return cp::Filter(table, mask).ValueOrDie().table()->CombineChunks().ValueOrDie();
}

// x = 0..n-1 with every 10th NULL, s = "v<x>"; the rows of `predicate`, as a table.
std::shared_ptr<arrow::Table> Filter(int64_t n, const cp::Expression& predicate) {
  arrow::Int64Builder x;
  arrow::StringBuilder s;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE((i % 10 == 9 ? x.AppendNull() : x.Append(i)).ok());
    EXPECT_TRUE(s.Append("v" + std::to_string(i)).ok());
  }
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("x", arrow::int64()), arrow::field("s", arrow::utf8())}),
      {x.Finish().ValueOrDie(), s.Finish().ValueOrDie()});
  auto filtered =
      Filtered(ac::Declaration("table_source", ac::TableSourceNodeOptions(table, 1000)), predicate);
  EXPECT_TRUE(filtered.ok()) << filtered.status().ToString();
  auto out = ac::DeclarationToTable(std::move(*filtered));
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? (*out)->CombineChunks().ValueOrDie() : nullptr;
}

// What Arrow's filter keeps of the same rows.
std::shared_ptr<arrow::Table> Want(int64_t n, const cp::Expression& predicate) {
  return ArrowKeeps(Filter(n, cp::literal(true)), predicate);
}

TEST(FilterNode, KeepsWhatArrowsFilterKeepsWhateverTheShare) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  const auto x = cp::field_ref("x");
  const int64_t n = 10'000;
  for (const auto& predicate : {
           cp::literal(true),                              // all: passed as they are
           cp::greater_equal(x, cp::literal(int64_t{0})),  // all but NULLs
           cp::less(x, cp::literal(int64_t{7})),           // a few: taken by index
           cp::equal(cp::call("bit_wise_and", {x, cp::literal(int64_t{3})}),
                     cp::literal(int64_t{1})),    // a quarter: filtered
           cp::less(x, cp::literal(int64_t{0})),  // none
           cp::literal(false),
       }) {
    auto got = Filter(n, predicate);
    auto want = Want(n, predicate);
    ASSERT_NE(got, nullptr);
    EXPECT_TRUE(got->Equals(*want)) << predicate.ToString() << "\n"
                                    << got->num_rows() << " rows, want " << want->num_rows();
  }
  // A predicate that is not boolean is refused, naming it.
  auto bad = Filtered(
      ac::Declaration("table_source", ac::TableSourceNodeOptions(Filter(10, cp::literal(true)))),
      cp::field_ref("x"));
  ASSERT_TRUE(bad.ok());
  auto ran = ac::DeclarationToTable(std::move(*bad));
  ASSERT_FALSE(ran.ok());
  EXPECT_NE(ran.status().message().find("a filter must be boolean"), std::string::npos)
      << ran.status().ToString();
}

// Fixed-width columns of every width (1, 2, 4, 8 and 16 bytes), which the node compacts itself,
// two of them with NULLs, beside a string, which Arrow's filter takes; b is a boolean with NULLs,
// in random stretches, all-true and all-false stretches; c the same without NULLs.
std::shared_ptr<arrow::Table> Widths(int64_t n) {
  std::mt19937_64 rng(7);
  arrow::Int8Builder i8;
  arrow::Int16Builder i16;
  arrow::Int32Builder i32;
  arrow::Date32Builder d32;
  arrow::Int64Builder i64, nullable;
  arrow::DoubleBuilder f64;
  arrow::Decimal128Builder dec(arrow::decimal128(15, 2)), nullable_dec(arrow::decimal128(15, 2));
  arrow::StringBuilder s;
  arrow::BooleanBuilder b, c;
  auto dec_value = [](int64_t i) { return arrow::Decimal128(i * 31 - 7); };
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(i8.Append(static_cast<int8_t>(i)).ok());
    EXPECT_TRUE(i16.Append(static_cast<int16_t>(i * 3)).ok());
    EXPECT_TRUE(i32.Append(static_cast<int32_t>(i)).ok());
    EXPECT_TRUE(d32.Append(static_cast<int32_t>(9000 + i)).ok());
    EXPECT_TRUE(i64.Append(i * 1'000'003).ok());
    EXPECT_TRUE((i % 11 == 0 ? nullable.AppendNull() : nullable.Append(i)).ok());
    EXPECT_TRUE(f64.Append(static_cast<double>(i) / 7).ok());
    EXPECT_TRUE(dec.Append(arrow::Decimal128(i * 997 - 50'000)).ok());
    EXPECT_TRUE(
        (i % 7 == 2 || i % 300 < 70 ? nullable_dec.AppendNull() : nullable_dec.Append(dec_value(i)))
            .ok());
    EXPECT_TRUE(s.Append("v" + std::to_string(i)).ok());
    const int64_t stretch = (i / 300) % 3;  // random, all true, all false
    const bool keep = stretch == 0 ? rng() % 10 < 6 : stretch == 1;
    EXPECT_TRUE((i % 13 == 5 ? b.AppendNull() : b.Append(keep)).ok());
    EXPECT_TRUE(c.Append(keep).ok());
  }
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (arrow::ArrayBuilder* builder : std::initializer_list<arrow::ArrayBuilder*>{
           &i8, &i16, &i32, &d32, &i64, &f64, &dec, &s, &nullable, &nullable_dec, &b, &c}) {
    columns.push_back(builder->Finish().ValueOrDie());
  }
  return arrow::Table::Make(
      arrow::schema({arrow::field("i8", arrow::int8()), arrow::field("i16", arrow::int16()),
                     arrow::field("i32", arrow::int32()), arrow::field("d32", arrow::date32()),
                     arrow::field("i64", arrow::int64()), arrow::field("f64", arrow::float64()),
                     arrow::field("dec", arrow::decimal128(15, 2)),
                     arrow::field("s", arrow::utf8()), arrow::field("nullable", arrow::int64()),
                     arrow::field("nullable_dec", arrow::decimal128(15, 2)),
                     arrow::field("b", arrow::boolean()), arrow::field("c", arrow::boolean())}),
      columns);
}

TEST(FilterNode, CompactsFixedWidthColumnsAsArrowFilters) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  const int64_t n = 10'000;
  auto table = Widths(n);
  const auto i32 = cp::field_ref("i32");
  for (const auto& predicate : {
           // A boolean column as it is: batches of 999 rows make masks that start inside a
           // byte; b's NULLs drop rows.
           cp::field_ref("c"),
           cp::field_ref("b"),
           // Most rows (short runs of dropped rows), and about half.
           cp::not_equal(cp::call("bit_wise_and", {i32, cp::literal(int32_t{7})}),
                         cp::literal(int32_t{3})),
           cp::equal(cp::call("bit_wise_and", {i32, cp::literal(int32_t{1})}),
                     cp::literal(int32_t{0})),
       }) {
    auto got = RunFilter(table, predicate);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    auto want = ArrowKeeps(table, predicate);
    ASSERT_GT(want->num_rows(), n / 3) << predicate.ToString();
    EXPECT_TRUE((*got)->Equals(*want)) << predicate.ToString() << "\n"
                                       << (*got)->num_rows() << " rows, want " << want->num_rows();
  }
}

// Named outputs: only those columns come out, in that order, with the rows the whole input
// keeps, even none (a count reads no column); a conjunction reads columns it does not pass on.
TEST(FilterNode, PassesOnOnlyTheNamedColumns) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  auto table = Widths(5'000);
  const auto i32 = cp::field_ref("i32");
  const auto predicate =
      cp::and_(cp::not_equal(cp::call("bit_wise_and", {i32, cp::literal(int32_t{7})}),
                             cp::literal(int32_t{3})),
               cp::greater(cp::field_ref("i16"), cp::literal(int16_t{30})));
  auto want = ArrowKeeps(table, predicate);
  for (const std::vector<std::string>& outputs :
       {std::vector<std::string>{"nullable_dec", "s"}, std::vector<std::string>{}}) {
    auto filtered =
        Filtered(ac::Declaration("table_source", ac::TableSourceNodeOptions(table, 999)), predicate,
                 nullptr, false, outputs);
    ASSERT_TRUE(filtered.ok()) << filtered.status().ToString();
    auto got = ac::DeclarationToTable(std::move(*filtered), false);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ((*got)->num_columns(), static_cast<int>(outputs.size()));
    EXPECT_EQ((*got)->num_rows(), want->num_rows());
    for (size_t c = 0; c < outputs.size(); ++c) {
      EXPECT_EQ((*got)->schema()->field(static_cast<int>(c))->name(), outputs[c]);
      EXPECT_TRUE((*got)->column(static_cast<int>(c))->Equals(*want->GetColumnByName(outputs[c])))
          << outputs[c];
    }
  }
}

// A conjunction runs conjunct by conjunct, the costly ones on only the rows that the ones before
// kept, gathered by index; whatever the order, the share kept at each step and the NULLs, it
// keeps what Arrow's filter of the whole predicate keeps.
TEST(FilterNode, KeepsWhatArrowKeepsConjunctByConjunct) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  const int64_t n = 10'000;
  auto table = Widths(n);
  // A dictionary column too, as Parquet strings arrive: "d<i % 5>".
  arrow::StringBuilder words;
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(words.Append("d" + std::to_string(i % 5)).ok());
  auto encoded = cp::DictionaryEncode(words.Finish().ValueOrDie()).ValueOrDie();
  table = table
              ->AddColumn(table->num_columns(), arrow::field("dict", encoded.type()),
                          std::make_shared<arrow::ChunkedArray>(encoded.make_array()))
              .ValueOrDie();
  const auto i32 = cp::field_ref("i32");
  const auto dec = cp::field_ref("dec");
  const auto few = cp::less(i32, cp::literal(int32_t{1500}));  // 15 %: a selection follows
  const auto costly = cp::greater(dec, cp::literal(arrow::Decimal128Scalar(
                                           arrow::Decimal128(-20'000), arrow::decimal128(15, 2))));
  const auto odd =
      cp::equal(cp::call("bit_wise_and", {i32, cp::literal(int32_t{1})}), cp::literal(int32_t{1}));
  const auto in_dict = cp::call(
      "is_in", {cp::field_ref("dict")},
      cp::SetLookupOptions(
          arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["d1", "d3"])").ValueOrDie()));
  const auto starts =
      cp::call("starts_with", {cp::field_ref("s")}, cp::MatchSubstringOptions("v1"));
  const auto nullable = cp::greater(cp::field_ref("nullable"), cp::literal(int64_t{100}));
  for (const auto& predicate : {
           cp::and_({few, costly}),
           cp::and_({costly, few, odd}),  // the cheap one runs first whatever its place
           cp::and_({few, in_dict, starts, costly}),
           cp::and_({few, cp::field_ref("b"), nullable, in_dict}),  // NULLs in later conjuncts
           cp::call("and", {few, cp::call("and", {odd, nullable})}),
           cp::and_({cp::literal(true), few, odd}), cp::and_({few, odd, cp::literal(false)}),
           cp::and_({few, odd, cp::literal(arrow::MakeNullScalar(arrow::boolean()))}),
           cp::and_({cp::less(i32, cp::literal(int32_t{0})), odd}),         // none from the first
           cp::and_({few, cp::equal(i32, cp::literal(int32_t{-1})), odd}),  // none later
           cp::and_({cp::field_ref("c"), odd, costly}),  // most rows: no selection
       }) {
    auto got = RunFilter(table, predicate);
    ASSERT_TRUE(got.ok()) << predicate.ToString() << ": " << got.status().ToString();
    auto want = ArrowKeeps(table, predicate);
    EXPECT_TRUE((*got)->Equals(*want)) << predicate.ToString() << "\n"
                                       << (*got)->num_rows() << " rows, want " << want->num_rows();
  }
}

// A conjunct that may fail (here a division) runs only on the rows that the conjuncts before it
// kept, cheap comparisons first, however many that is: the answer does not depend on how rows
// fall into batches.
TEST(FilterNode, AConjunctThatMayFailSeesOnlyTheRowsKeptBeforeIt) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  const int64_t n = 10'000;
  auto table = Widths(n);  // i32 = 0..n-1: only the first row is 0
  const auto i32 = cp::field_ref("i32");
  const auto nonzero = cp::not_equal(i32, cp::literal(int32_t{0}));
  const auto tenth = cp::greater(cp::call("divide", {cp::literal(int32_t{10}), i32}),
                                 cp::literal(int32_t{1}));  // 10 / i32 > 1: i32 in 1..5
  const auto want_rows = cp::and_(cp::greater_equal(i32, cp::literal(int32_t{1})),
                                  cp::less_equal(i32, cp::literal(int32_t{5})));
  ASSERT_EQ(ArrowKeeps(table, want_rows)->num_rows(), 5);
  const std::vector<std::pair<cp::Expression, cp::Expression>> cases = {
      {cp::and_({nonzero, tenth}), want_rows},  // all rows but one kept before the division
      {cp::and_({tenth, nonzero}), want_rows},  // the comparison runs first whatever its place
      {cp::and_({cp::field_ref("c"), nonzero, tenth}), cp::and_(cp::field_ref("c"), want_rows)},
  };
  for (const auto& [predicate, rows] : cases) {
    // `rows` says the same without the division, which Arrow's filter can then evaluate whole.
    auto got = RunFilter(table, predicate);
    ASSERT_TRUE(got.ok()) << predicate.ToString() << ": " << got.status().ToString();
    EXPECT_TRUE((*got)->Equals(*ArrowKeeps(table, rows))) << predicate.ToString() << "\n"
                                                          << (*got)->ToString();
  }
  // Alone, the division fails on the row it reaches.
  auto failed = RunFilter(table, tenth);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("divide by zero"), std::string::npos)
      << failed.status().ToString();
  // The error names the condition that failed, among the filter's conjuncts.
  EXPECT_NE(failed.status().message().find("condition ((10 / i32) > 1)"), std::string::npos)
      << failed.status().ToString();
  // ... also when it runs on the rows an earlier conjunct selected (row 0, where i32 is 0, is).
  failed = RunFilter(table, cp::and_({cp::not_equal(i32, cp::literal(int32_t{5})), tenth}));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("condition ((10 / i32) > 1): divide by zero"),
            std::string::npos)
      << failed.status().ToString();
}

}  // namespace
}  // namespace sluice::exec
