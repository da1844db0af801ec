#include "exec/window_order.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "plan/compute_init.h"

namespace sluice::exec {
namespace {

namespace cp = arrow::compute;

// Random rows with few distinct values, so partitions and peers hold several rows: a string
// partition key and ORDER BY candidates of each kind the codes take, all with NULLs; the double
// holds -0 and 0 (peers), the decimal negative values.
std::shared_ptr<arrow::RecordBatch> RandomRows(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int k) { return static_cast<int>(rng() % static_cast<uint32_t>(k)); };
  arrow::StringBuilder p;
  arrow::Int32Builder i32;
  arrow::DoubleBuilder f64;
  arrow::Decimal128Builder dec(arrow::decimal128(12, 2));
  arrow::Date32Builder date;
  arrow::BooleanBuilder flag;
  for (int64_t r = 0; r < n; ++r) {
    const bool null = pick(7) == 0;
    EXPECT_TRUE(
        (null ? p.AppendNull() : p.Append(std::string(1, static_cast<char>('a' + pick(4))))).ok());
    EXPECT_TRUE((pick(6) == 0 ? i32.AppendNull() : i32.Append(pick(9) - 4)).ok());
    const double doubles[] = {-2.5, -0.0, 0.0, 1.0, 1e300};
    EXPECT_TRUE((pick(6) == 0 ? f64.AppendNull() : f64.Append(doubles[pick(5)])).ok());
    EXPECT_TRUE(
        (pick(6) == 0 ? dec.AppendNull() : dec.Append(arrow::Decimal128(pick(11) * 125 - 600)))
            .ok());
    EXPECT_TRUE((pick(6) == 0 ? date.AppendNull() : date.Append(10950 + pick(5))).ok());
    EXPECT_TRUE((pick(6) == 0 ? flag.AppendNull() : flag.Append(pick(2) == 1)).ok());
  }
  auto schema = arrow::schema(
      {arrow::field("p", arrow::utf8()), arrow::field("i", arrow::int32()),
       arrow::field("f", arrow::float64()), arrow::field("d", arrow::decimal128(12, 2)),
       arrow::field("t", arrow::date32()), arrow::field("b", arrow::boolean())});
  return arrow::RecordBatch::Make(
      schema, n,
      {p.Finish().ValueOrDie(), i32.Finish().ValueOrDie(), f64.Finish().ValueOrDie(),
       dec.Finish().ValueOrDie(), date.Finish().ValueOrDie(), flag.Finish().ValueOrDie()});
}

// The row's value of `column` as text (NULL as "null"), to compare rows.
std::string Text(const arrow::RecordBatch& batch, const std::string& column, int64_t row) {
  auto scalar = batch.GetColumnByName(column)->GetScalar(row).ValueOrDie();
  if (!scalar->is_valid) return "null";
  if (scalar->type->id() == arrow::Type::DOUBLE) {
    const double v = static_cast<const arrow::DoubleScalar&>(*scalar).value;
    return std::to_string(v == 0 ? 0.0 : v);  // -0 and 0 are one value
  }
  return scalar->ToString();
}

// Checks `order` against Arrow's stable sort by the partition key then the ORDER BY keys: the
// same rows in each partition in the same order, and peers where the ORDER BY values are equal.
void ExpectLikeArrowSort(const arrow::RecordBatch& batch, const std::vector<cp::SortKey>& keys,
                         bool partitioned) {
  auto coded = OrderByCodes(
      batch, partitioned ? std::vector<std::string>{"p"} : std::vector<std::string>{}, keys);
  ASSERT_TRUE(coded.ok()) << coded.status().ToString();
  ASSERT_TRUE(coded->has_value());
  const WindowOrder& order = **coded;
  const int64_t n = batch.num_rows();
  ASSERT_EQ(order.indices->length(), n);

  std::vector<cp::SortKey> all;
  if (partitioned) all.emplace_back(arrow::FieldRef("p"));
  all.insert(all.end(), keys.begin(), keys.end());
  auto expected = cp::SortIndices(arrow::Datum(batch), cp::SortOptions(all)).ValueOrDie();
  const auto& want = static_cast<const arrow::UInt64Array&>(*expected);

  // Each partition's rows, in order, as Arrow sorts them and as the codes do.
  auto partition_of = [&](int64_t row) { return partitioned ? Text(batch, "p", row) : ""; };
  std::map<std::string, std::vector<int64_t>> by_arrow, by_codes;
  for (int64_t i = 0; i < n; ++i) {
    const auto row = static_cast<int64_t>(want.Value(i));
    by_arrow[partition_of(row)].push_back(row);
  }
  std::string current;
  std::map<std::string, bool> seen;
  for (int64_t i = 0; i < n; ++i) {
    const auto row = static_cast<int64_t>(order.indices->Value(i));
    const std::string part = partition_of(row);
    const bool starts = order.layout.part_begin[static_cast<size_t>(i)] == i;
    EXPECT_EQ(starts, i == 0 || part != current) << "row " << i;
    if (starts) {
      EXPECT_FALSE(seen[part]) << "partition " << part << " is not contiguous";
      seen[part] = true;
    }
    current = part;
    by_codes[part].push_back(row);
    if (i > 0 && !starts) {
      const auto before = static_cast<int64_t>(order.indices->Value(i - 1));
      bool peers = true;
      for (const auto& k : keys) {
        peers &= Text(batch, *k.target.name(), row) == Text(batch, *k.target.name(), before);
      }
      EXPECT_EQ(order.layout.peer_begin[static_cast<size_t>(i)] == i, !peers) << "row " << i;
    }
  }
  EXPECT_EQ(by_codes, by_arrow);
}

TEST(WindowOrder, MatchesArrowsStableSortForEachKeyKindOrderAndNullPlacement) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  const auto batch = RandomRows(400, 7);
  for (const char* column : {"i", "f", "d", "t", "b"}) {
    for (auto order : {cp::SortOrder::Ascending, cp::SortOrder::Descending}) {
      for (auto nulls : {cp::NullPlacement::AtStart, cp::NullPlacement::AtEnd}) {
        SCOPED_TRACE(std::string(column) + (order == cp::SortOrder::Ascending ? " asc" : " desc") +
                     (nulls == cp::NullPlacement::AtStart ? " nulls first" : " nulls last"));
        ExpectLikeArrowSort(*batch, {cp::SortKey(arrow::FieldRef(column), order, nulls)}, true);
        ExpectLikeArrowSort(*batch, {cp::SortKey(arrow::FieldRef(column), order, nulls)}, false);
      }
    }
  }
}

TEST(WindowOrder, SeveralOrderKeysAndOnlyAPartition) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  const auto batch = RandomRows(500, 11);
  ExpectLikeArrowSort(
      *batch,
      {cp::SortKey(arrow::FieldRef("t"), cp::SortOrder::Descending),
       cp::SortKey(arrow::FieldRef("i")),
       cp::SortKey(arrow::FieldRef("d"), cp::SortOrder::Descending, cp::NullPlacement::AtStart)},
      true);
  ExpectLikeArrowSort(*batch, {}, true);
}

TEST(WindowOrder, KeysWithoutCodesFallBackAndWideCodesBecomeRanks) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  auto strings = arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["b", "a"])").ValueOrDie();
  auto nan = arrow::json::ArrayFromJSONString(arrow::float64(), "[1.0, NaN]").ValueOrDie();
  auto wide = arrow::json::ArrayFromJSONString(arrow::decimal128(38, 0),
                                               R"(["1", "100000000000000000000"])")
                  .ValueOrDie();
  // Two full-range int64 keys need 128 bits of codes.
  auto full = arrow::json::ArrayFromJSONString(arrow::int64(),
                                               "[-9223372036854775808, 9223372036854775807]")
                  .ValueOrDie();
  auto batch = arrow::RecordBatch::Make(
      arrow::schema({arrow::field("s", arrow::utf8()), arrow::field("f", arrow::float64()),
                     arrow::field("w", arrow::decimal128(38, 0)),
                     arrow::field("x", arrow::int64())}),
      2, {strings, nan, wide, full});
  for (const char* column : {"s", "f", "w"}) {
    auto coded = OrderByCodes(*batch, {}, {cp::SortKey(arrow::FieldRef(column))});
    ASSERT_TRUE(coded.ok());
    EXPECT_FALSE(coded->has_value()) << column;
  }
  // 64 bits of codes fit; with a partition's bit more, the codes become ranks.
  for (const std::vector<std::string>& partition :
       {std::vector<std::string>{}, std::vector<std::string>{"s"}}) {
    auto coded = OrderByCodes(*batch, partition, {cp::SortKey(arrow::FieldRef("x"))});
    ASSERT_TRUE(coded.ok());
    ASSERT_TRUE(coded->has_value());
    EXPECT_EQ((*coded)->indices->Value(0), 0u);
    EXPECT_EQ((*coded)->layout.part_begin[1], partition.empty() ? 0 : 1);
  }
}

}  // namespace
}  // namespace sluice::exec
