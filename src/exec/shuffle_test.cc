#include "exec/shuffle.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "artifact/blake3_digest.h"

namespace sluice::exec {
namespace {

std::shared_ptr<arrow::Table> Keys(int n) {
  arrow::StringBuilder b;
  for (int i = 0; i < n; ++i) EXPECT_TRUE(b.Append("key-" + std::to_string(i % 50)).ok());
  return arrow::Table::Make(arrow::schema({arrow::field("k", arrow::utf8())}), {*b.Finish()});
}

TEST(Shuffle, ReaderChecksTheSchemaAndNamesTheFile) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("sluice-shuffle-" + std::to_string(getpid()));
  auto store = *storage::ObjectStore::Open("file://" + dir.string());
  auto written = WriteShuffleFile(store.get(), "run/s0/p1/part-0.arrow", Keys(10));
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->rows, 10);
  const std::string digest = written->blake3;
  auto ok = ReadShuffleFile(store.get(), "run/s0/p1/part-0.arrow", digest, *Keys(1)->schema());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)->num_rows(), 10);
  auto declared = arrow::schema({arrow::field("k", arrow::int64())});
  auto bad = ReadShuffleFile(store.get(), "run/s0/p1/part-0.arrow", digest, *declared);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "shuffle file 'run/s0/p1/part-0.arrow': schema mismatch: expected [k: int64], got "
            "[k: string]");
  auto nope = arrow::Buffer::FromString("nope");
  ASSERT_TRUE(store->Put("run/garbage.arrow", nope).ok());
  auto garbage =
      ReadShuffleFile(store.get(), "run/garbage.arrow", artifact::Blake3(*nope).ToHex(), *declared);
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(
      garbage.status().message().find("shuffle file 'run/garbage.arrow': not a valid Arrow IPC"),
      std::string::npos);
  std::filesystem::remove_all(dir);
}

// A flipped byte in a value buffer still makes valid Arrow, so only the writer's digest can
// tell: the reader must refuse the file, naming it, and never return the other value.
TEST(Shuffle, AFlippedValueByteIsAnErrorNamingTheFile) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("sluice-shuffle-flip-" + std::to_string(getpid()));
  auto store = *storage::ObjectStore::Open("file://" + dir.string());
  arrow::Int64Builder b;
  for (int64_t v : {int64_t{0x0102030405060708}, int64_t{7}}) ASSERT_TRUE(b.Append(v).ok());
  auto table =
      arrow::Table::Make(arrow::schema({arrow::field("v", arrow::int64())}), {*b.Finish()});
  const std::string key = "run/s0/m0/part-0.arrow";
  auto written = WriteShuffleFile(store.get(), key, table);
  ASSERT_TRUE(written.ok());
  std::string bytes = (*store->Get(key))->ToString();
  const std::string needle("\x08\x07\x06\x05\x04\x03\x02\x01", 8);
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  bytes[at] ^= 0x01;
  ASSERT_TRUE(store->Put(key, arrow::Buffer::FromString(bytes)).ok());
  // The damage is invisible to Arrow's own validation...
  auto reader = arrow::ipc::RecordBatchFileReader::Open(
      std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(bytes)));
  ASSERT_TRUE(reader.ok());
  auto batch = (*reader)->ReadRecordBatch(0);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE((*batch)->ValidateFull().ok());
  // ...but not to the digest.
  auto read = ReadShuffleFile(store.get(), key, written->blake3, *table->schema());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), arrow::StatusCode::IOError);
  EXPECT_NE(read.status().message().find("shuffle file '" + key + "' hashes to "),
            std::string::npos)
      << read.status().message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::exec
