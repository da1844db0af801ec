// Hash partitioning on several key columns: equal keys meet, whatever the batch they came in.
#include "exec/row_partition.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "exec/shuffle.h"

namespace sluice::exec {
namespace {

std::shared_ptr<arrow::RecordBatch> Batch(const std::vector<std::optional<std::string>>& g,
                                          const std::vector<double>& f) {
  arrow::StringBuilder gb;
  arrow::DoubleBuilder fb;
  for (const auto& v : g) EXPECT_TRUE((v ? gb.Append(*v) : gb.AppendNull()).ok());
  for (double v : f) EXPECT_TRUE(fb.Append(v).ok());
  auto schema =
      arrow::schema({arrow::field("g", arrow::utf8()), arrow::field("f", arrow::float64())});
  return arrow::RecordBatch::Make(schema, static_cast<int64_t>(g.size()),
                                  {*gb.Finish(), *fb.Finish()});
}

TEST(RowPartitionTest, EqualKeysMeetAcrossBatches) {
  auto a = Batch({"x", "y", std::nullopt, "x"}, {1.0, 2.0, 3.0, 0.0});
  auto b = Batch({std::nullopt, "x", "x"}, {3.0, -0.0, 1.0});
  auto pa = PartitionRowsByKeys(*a, {"g", "f"}, 7);
  auto pb = PartitionRowsByKeys(*b, {"g", "f"}, 7);
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ((*pa)[2], (*pb)[0]);  // (NULL, 3.0)
  EXPECT_EQ((*pa)[3], (*pb)[1]);  // ("x", 0.0) and ("x", -0.0) group together
  EXPECT_EQ((*pa)[0], (*pb)[2]);  // ("x", 1.0)
}

TEST(RowPartitionTest, ColumnsAreNotConcatenated) {
  // ("ab", "c") and ("a", "bc") are different keys; the length prefix keeps them apart.
  arrow::StringBuilder x, y;
  ASSERT_TRUE(x.AppendValues({"ab", "a"}).ok());
  ASSERT_TRUE(y.AppendValues({"c", "bc"}).ok());
  auto schema = arrow::schema({arrow::field("x", arrow::utf8()), arrow::field("y", arrow::utf8())});
  auto batch = arrow::RecordBatch::Make(schema, 2, {*x.Finish(), *y.Finish()});
  bool differ = false;
  for (int32_t n : {97, 101, 103}) {
    auto p = PartitionRowsByKeys(*batch, {"x", "y"}, n);
    ASSERT_TRUE(p.ok());
    differ = differ || (*p)[0] != (*p)[1];
  }
  EXPECT_TRUE(differ);
}

TEST(RowPartitionTest, NoKeysIsOnePartitionAndSplitKeepsEveryRow) {
  auto batch = Batch({"a", "b", "c", "d", "e"}, {1, 2, 3, 4, 5});
  auto p = PartitionRowsByKeys(*batch, {}, 4);
  ASSERT_TRUE(p.ok());
  for (int32_t v : *p) EXPECT_EQ(v, 0);
  auto assignment = PartitionRowsByKeys(*batch, {"g"}, 3);
  ASSERT_TRUE(assignment.ok());
  auto parts = SplitBatch(batch, *assignment, 3);
  ASSERT_TRUE(parts.ok());
  int64_t rows = 0;
  for (const auto& t : *parts) {
    EXPECT_TRUE(t->schema()->Equals(*batch->schema()));
    rows += t->num_rows();
  }
  EXPECT_EQ(rows, 5);
}

TEST(RowPartitionTest, SlicedColumnsHashAsTheirValues) {
  // A batch that is a slice of a larger one (an offset into its buffers, NULLs included) puts
  // each key where a batch of the same values alone does.
  arrow::Int64Builder k;
  arrow::Decimal128Builder d(arrow::decimal128(20, 2));
  for (int64_t i = 0; i < 40; ++i) {
    ASSERT_TRUE((i % 7 == 3 ? k.AppendNull() : k.Append(i * 1000003)).ok());
    ASSERT_TRUE(d.Append(arrow::Decimal128(i * 37, i)).ok());
  }
  auto schema = arrow::schema(
      {arrow::field("k", arrow::int64()), arrow::field("d", arrow::decimal128(20, 2))});
  auto whole = arrow::RecordBatch::Make(schema, 40, {*k.Finish(), *d.Finish()});
  auto slice = whole->Slice(13, 20);
  // The same values at offset 0: taken from the slice into new buffers.
  arrow::Int32Builder all_rows;
  for (int32_t i = 0; i < 20; ++i) ASSERT_TRUE(all_rows.Append(i).ok());
  auto taken = arrow::compute::Take(slice, *all_rows.Finish());
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  auto copy = taken->record_batch();
  ASSERT_EQ(copy->column(0)->offset(), 0);
  ASSERT_EQ(copy->column(0)->null_count(), slice->column(0)->null_count());
  auto a = PartitionRowsByKeys(*slice, {"k", "d"}, 5);
  auto b = PartitionRowsByKeys(*copy, {"k", "d"}, 5);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  auto all = PartitionRowsByKeys(*whole, {"k", "d"}, 5);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(std::equal(a->begin(), a->end(), all->begin() + 13));
}

TEST(RowPartitionTest, RegularIntegerKeysSpreadEvenly) {
  // Keys are often consecutive integers, or multiples of a power of two (TPC-H's order keys
  // come in runs of 8 every 32): each partition must get close to its share.
  for (auto [type, step] :
       {std::pair{arrow::int32(), 1}, {arrow::int64(), 1}, {arrow::int64(), 64}}) {
    arrow::Int64Builder b;
    for (int64_t i = 1; i <= 12000; ++i) ASSERT_TRUE(b.Append(i * step).ok());
    auto cast = arrow::compute::Cast(*b.Finish(), type);
    ASSERT_TRUE(cast.ok()) << cast.status().ToString();
    auto batch = arrow::RecordBatch::Make(arrow::schema({arrow::field("k", type)}), 12000,
                                          {cast->make_array()});
    for (int32_t n : {2, 3, 8}) {
      auto p = PartitionRowsByKeys(*batch, {"k"}, n);
      ASSERT_TRUE(p.ok());
      std::vector<int> counts(static_cast<size_t>(n));
      for (int32_t v : *p) ++counts[static_cast<size_t>(v)];
      for (int c : counts) {
        EXPECT_NEAR(c, 12000 / n, 12000 / n / 10)
            << type->ToString() << " keys " << step << " apart into " << n;
      }
    }
  }
}

TEST(RowPartitionTest, UnsupportedKeyTypeNamesIt) {
  auto values = std::make_shared<arrow::Int32Builder>();
  arrow::ListBuilder builder(arrow::default_memory_pool(), values);
  for (int32_t v : {1, 2}) {
    ASSERT_TRUE(builder.Append().ok());
    ASSERT_TRUE(values->Append(v).ok());
  }
  std::shared_ptr<arrow::Array> list = *builder.Finish();
  auto batch =
      arrow::RecordBatch::Make(arrow::schema({arrow::field("l", list->type())}), 2, {list});
  auto p = PartitionRowsByKeys(*batch, {"l"}, 2);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("list<item: int32>"), std::string::npos)
      << p.status().ToString();
}

}  // namespace
}  // namespace sluice::exec
