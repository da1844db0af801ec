#include "storage/ipc_stream.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

namespace sluice::storage {
namespace {

std::shared_ptr<arrow::RecordBatch> Batch(int64_t n) {
  arrow::Int64Builder ids;
  arrow::StringBuilder names;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(ids.Append(i).ok());
    EXPECT_TRUE(names.Append("n" + std::to_string(i)).ok());
  }
  auto schema =
      arrow::schema({arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8())});
  return arrow::RecordBatch::Make(schema, n, {*ids.Finish(), *names.Finish()});
}

TEST(IpcStream, RoundTrip) {
  auto a = Batch(3), b = Batch(5);
  auto bytes = WriteIpcStream(a->schema(), {a, b});
  ASSERT_TRUE(bytes.ok());
  auto back = ReadIpcStream(*bytes, "test stream");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->schema->Equals(*a->schema()));
  ASSERT_EQ(back->batches.size(), 2u);
  EXPECT_TRUE(back->batches[1]->Equals(*b));
  EXPECT_EQ(back->num_rows(), 8);
}

TEST(IpcStream, GarbageAndTruncationAreInvalidAndNamed) {
  auto garbage = ReadIpcStream(arrow::Buffer::FromString("definitely not arrow"), "object x");
  ASSERT_FALSE(garbage.ok());
  EXPECT_TRUE(garbage.status().IsInvalid());
  EXPECT_EQ(garbage.status().message().rfind("object x: ", 0), 0u) << garbage.status().message();

  auto bytes = *WriteIpcStream(Batch(100)->schema(), {Batch(100)});
  for (int64_t cut : {int64_t{1}, int64_t{8}, bytes->size() / 2, bytes->size() - 9}) {
    auto truncated = ReadIpcStream(arrow::SliceBuffer(bytes, 0, cut), "object y");
    ASSERT_FALSE(truncated.ok()) << "cut at " << cut;
    EXPECT_EQ(truncated.status().message().rfind("object y: ", 0), 0u);
  }
}

TEST(IpcStream, SchemaMismatchNamesBothFieldLists) {
  auto expected = arrow::schema({arrow::field("id", arrow::int64())});
  auto actual =
      arrow::schema({arrow::field("id", arrow::int32()), arrow::field("x", arrow::utf8())});
  auto st = CheckSchema(*expected, *actual, "stage-2-part-1.arrow");
  ASSERT_TRUE(st.IsTypeError());
  EXPECT_EQ(
      st.message(),
      "stage-2-part-1.arrow: schema mismatch: expected [id: int64], got [id: int32, x: string]");
  EXPECT_TRUE(CheckSchema(*expected, *expected, "x").ok());
}

}  // namespace
}  // namespace sluice::storage
