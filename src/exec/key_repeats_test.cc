// Dropping a semi or anti join's repeated build keys before an exchange: every key survives,
// NULL included, and repeats go where the keys came clustered or wherever they are hashed.
#include "exec/key_repeats.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>

namespace sluice::exec {
namespace {

using Keys = std::vector<std::optional<int64_t>>;

// A one-column table "k" of `type` whose chunks hold `chunks`' values.
std::shared_ptr<arrow::Table> KeyTable(const std::vector<Keys>& chunks,
                                       const std::shared_ptr<arrow::DataType>& type) {
  arrow::ArrayVector arrays;
  for (const Keys& chunk : chunks) {
    arrow::Int64Builder b;
    for (const auto& v : chunk) EXPECT_TRUE((v ? b.Append(*v) : b.AppendNull()).ok());
    auto cast = arrow::compute::Cast(*b.Finish(), type->id() == arrow::Type::DATE32
                                                      ? arrow::int32()
                                                      : type);  // dates: days since 1970
    EXPECT_TRUE(cast.ok()) << cast.status().ToString();
    auto data = cast->make_array()->data()->Copy();
    data->type = type;
    arrays.push_back(arrow::MakeArray(data));
  }
  return arrow::Table::Make(arrow::schema({arrow::field("k", type)}),
                            {std::make_shared<arrow::ChunkedArray>(arrays, type)});
}

// How many times each key (NULL as nullopt) is in column 0.
std::map<std::optional<int64_t>, int> Counts(const arrow::Table& table) {
  std::map<std::optional<int64_t>, int> out;
  auto column = table.column(0);
  if (column->type()->id() == arrow::Type::DATE32) {
    auto days = column->View(arrow::int32());
    EXPECT_TRUE(days.ok());
    column = *days;
  }
  auto cast = arrow::compute::Cast(column, arrow::int64());
  EXPECT_TRUE(cast.ok()) << cast.status().ToString();
  for (const auto& chunk : cast->chunked_array()->chunks()) {
    const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t i = 0; i < a.length(); ++i) {
      ++out[a.IsValid(i) ? std::optional<int64_t>(a.Value(i)) : std::nullopt];
    }
  }
  return out;
}

TEST(KeyRepeats, ClusteredKeysLoseTheirRunsAcrossChunks) {
  // Runs of 1-4 rows, NULLs in a run of their own, a run that spans two chunks, and key 7 in
  // two runs: kept twice, since halving the rows is enough and no hash table is built.
  for (auto type : {arrow::int64(), arrow::int32(), arrow::date32()}) {
    auto table = KeyTable(
        {{1, 1, 1, 2, 2, std::nullopt, std::nullopt, 7, 7, 7}, {7, 3, 3, 3, 3, 7, 7, 5}}, type);
    auto out = DropRepeatedKeys(table, {"k"});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE((*out)->schema()->Equals(*table->schema()));
    EXPECT_TRUE((*out)->column(0)->type()->Equals(*type));
    std::map<std::optional<int64_t>, int> want = {{1, 1}, {2, 1}, {std::nullopt, 1},
                                                  {7, 2}, {3, 1}, {5, 1}};
    EXPECT_EQ(Counts(**out), want) << type->ToString();
  }
}

TEST(KeyRepeats, KeysThatDoNotComeClusteredAreHashedToOneRowEach) {
  // Alternating keys have no runs: each is kept once all the same.
  auto table = KeyTable({{1, 2, 1, 2, std::nullopt, 1, std::nullopt}, {2, 9}}, arrow::int64());
  auto out = DropRepeatedKeys(table, {"k"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::map<std::optional<int64_t>, int> want = {{1, 1}, {2, 1}, {std::nullopt, 1}, {9, 1}};
  EXPECT_EQ(Counts(**out), want);
}

TEST(KeyRepeats, ASlicedChunkReadsFromItsOffset) {
  auto whole = KeyTable({{4, 4, 8, 8, 8, std::nullopt, 6, 6, 6, 6}}, arrow::int64());
  auto slice = whole->Slice(3, 6);  // 8, 8, NULL, 6, 6, 6
  ASSERT_EQ(slice->column(0)->chunk(0)->offset(), 3);
  auto out = DropRepeatedKeys(slice, {"k"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::map<std::optional<int64_t>, int> want = {{8, 1}, {std::nullopt, 1}, {6, 1}};
  EXPECT_EQ(Counts(**out), want);
}

TEST(KeyRepeats, OtherTablesKeepOneRowPerKey) {
  // A string key, and a key beside another column: hashed, one row per key.
  arrow::StringBuilder s;
  ASSERT_TRUE(s.AppendValues({"a", "a", "b", "a"}).ok());
  auto strings =
      arrow::Table::Make(arrow::schema({arrow::field("k", arrow::utf8())}), {*s.Finish()});
  auto out = DropRepeatedKeys(strings, {"k"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->num_rows(), 2);

  arrow::Int64Builder k, v;
  ASSERT_TRUE(k.AppendValues({3, 3, 3, 4}).ok());
  ASSERT_TRUE(v.AppendValues({10, 11, 12, 13}).ok());
  auto two = arrow::Table::Make(
      arrow::schema({arrow::field("v", arrow::int64()), arrow::field("k", arrow::int64())}),
      {*v.Finish(), *k.Finish()});
  out = DropRepeatedKeys(two, {"k"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->num_rows(), 2);
  EXPECT_EQ((*out)->schema()->field(0)->name(), "v");
}

}  // namespace
}  // namespace sluice::exec
