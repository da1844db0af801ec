#include "storage/snappy_codec.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/util/compression.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_reader.h>

#include <cstring>
#include <string>
#include <vector>

namespace sluice::storage {
namespace {

// 200,000 int64 values, which snappy compresses.
std::shared_ptr<arrow::Table> Values() {
  arrow::Int64Builder builder;
  for (int64_t i = 0; i < 200000; ++i) EXPECT_TRUE(builder.Append((i * 7919) % 100003).ok());
  return arrow::Table::Make(arrow::schema({arrow::field("v", arrow::int64())}),
                            {builder.Finish().ValueOrDie()});
}

// `table` as the bytes of a snappy-compressed Parquet file without dictionary pages.
std::shared_ptr<arrow::Buffer> SnappyParquet(const arrow::Table& table) {
  auto sink = arrow::io::BufferOutputStream::Create().ValueOrDie();
  auto properties = parquet::WriterProperties::Builder()
                        .compression(parquet::Compression::SNAPPY)
                        ->disable_dictionary()
                        ->data_pagesize(64 << 20)
                        ->build();
  EXPECT_TRUE(parquet::arrow::WriteTable(table, arrow::default_memory_pool(), sink,
                                         table.num_rows(), properties)
                  .ok());
  return sink->Finish().ValueOrDie();
}

arrow::Result<std::shared_ptr<arrow::Table>> Read(std::shared_ptr<arrow::Buffer> bytes) {
  ARROW_ASSIGN_OR_RAISE(
      auto reader,
      parquet::arrow::OpenFile(std::make_shared<arrow::io::BufferReader>(std::move(bytes)),
                               arrow::default_memory_pool()));
  return reader->ReadTable();
}

// The point of the file: Arrow's Parquet reader, in its own library, decompresses with libsnappy.
TEST(SnappyCodec, ArrowsParquetReaderDecompressesPagesWithLibsnappy) {
  const auto table = Values();
  const auto bytes = SnappyParquet(*table);
  const int64_t before = LibsnappyDecompressions();
  auto back = Read(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE((*back)->Equals(*table));
  EXPECT_GE(LibsnappyDecompressions() - before, 1);
}

TEST(SnappyCodec, ACorruptPageIsAnErrorNotGarbage) {
  const auto bytes = SnappyParquet(*Values());
  auto metadata = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(bytes))
                      ->metadata();
  auto chunk = metadata->RowGroup(0)->ColumnChunk(0);
  // Past the first page's header and its stream's length, to the end of the column chunk: the
  // stream's next tag then reads 0xff, a copy from 4 GiB back.
  const int64_t from = chunk->data_page_offset() + 256;
  const int64_t to = chunk->data_page_offset() + chunk->total_compressed_size();
  ASSERT_LT(from, to);
  auto corrupt = arrow::AllocateBuffer(bytes->size()).ValueOrDie();
  std::memcpy(corrupt->mutable_data(), bytes->data(), bytes->size());
  std::memset(corrupt->mutable_data() + from, 0xff, to - from);
  auto back = Read(std::move(corrupt));
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("corrupt snappy data"), std::string::npos)
      << back.status().ToString();
}

TEST(SnappyCodec, DecompressChecksTheDeclaredLengthAndTheSpaceGiven) {
  // The overload Parquet calls; Create(type, level) is libarrow's and calls libarrow's own.
  auto codec = arrow::util::Codec::Create(arrow::Compression::SNAPPY, arrow::util::CodecOptions())
                   .ValueOrDie();
  const std::string text(10000, 'x');
  std::vector<uint8_t> compressed(codec->MaxCompressedLen(text.size(), nullptr));
  const int64_t n = codec
                        ->Compress(text.size(), reinterpret_cast<const uint8_t*>(text.data()),
                                   compressed.size(), compressed.data())
                        .ValueOrDie();
  std::vector<uint8_t> out(text.size());
  auto length = codec->Decompress(n, compressed.data(), out.size(), out.data());
  ASSERT_TRUE(length.ok()) << length.status().ToString();
  EXPECT_EQ(*length, static_cast<int64_t>(text.size()));
  EXPECT_EQ(std::string(out.begin(), out.end()), text);

  auto short_space = codec->Decompress(n, compressed.data(), out.size() - 1, out.data());
  ASSERT_FALSE(short_space.ok());
  EXPECT_NE(short_space.status().message().find("decompresses to 10000 bytes, more than the 9999"),
            std::string::npos)
      << short_space.status().ToString();

  // A valid length prefix (10000) and then a tag that copies from before the output's start.
  const uint8_t bad[] = {0x90, 0x4e, 0xff, 0xff, 0xff, 0xff, 0xff};
  auto garbage = codec->Decompress(sizeof(bad), bad, out.size(), out.data());
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("corrupt snappy data"), std::string::npos);
  auto empty = codec->Decompress(0, bad, out.size(), out.data());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("without a valid length"), std::string::npos);
}

// Every other codec is Arrow's own, untouched.
TEST(SnappyCodec, OtherCodecsAreArrows) {
  for (auto type : {arrow::Compression::ZSTD, arrow::Compression::LZ4_FRAME}) {
    auto codec = arrow::util::Codec::Create(type, arrow::util::CodecOptions());
    ASSERT_TRUE(codec.ok()) << codec.status().ToString();
    EXPECT_EQ((*codec)->compression_type(), type);
    const std::string text(5000, 'y');
    std::vector<uint8_t> compressed((*codec)->MaxCompressedLen(text.size(), nullptr));
    const int64_t n = (*codec)
                          ->Compress(text.size(), reinterpret_cast<const uint8_t*>(text.data()),
                                     compressed.size(), compressed.data())
                          .ValueOrDie();
    std::vector<uint8_t> out(text.size());
    ASSERT_EQ((*codec)->Decompress(n, compressed.data(), out.size(), out.data()).ValueOrDie(),
              static_cast<int64_t>(text.size()));
  }
  EXPECT_FALSE(arrow::util::Codec::Create(static_cast<arrow::Compression::type>(99),
                                          arrow::util::CodecOptions())
                   .ok());
}

}  // namespace
}  // namespace sluice::storage
