#include "plan/table_source.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "storage/object_store.h"

namespace sluice::plan {
namespace {

// Which string columns a Parquet table reads as dictionaries: those whose pages are all
// dictionary-encoded, and not those whose dictionary is about as large as the values.
class DictionaryColumnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-table-source-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = storage::ObjectStore::Open("file://" + dir_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = *store;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes t.parquet: `flag` (3 values), `name` (every value distinct, 24 bytes), `plain` (3
  // values, dictionary encoding off), `code` (2 distinct per 16 rows, 2 bytes) and an int `k`;
  // 4,000 rows in row groups of 1,000.
  void Write() {
    arrow::StringBuilder flag, name, plain, code;
    arrow::Int64Builder k;
    for (int i = 0; i < 4000; ++i) {
      const std::string f(1, static_cast<char>('A' + i % 3));
      ASSERT_TRUE(flag.Append(f).ok());
      ASSERT_TRUE(plain.Append(f).ok());
      ASSERT_TRUE(name.Append("customer#" + std::to_string(1000000000 + i * 7919) + "-xyzxy").ok());
      ASSERT_TRUE(code.Append(std::to_string(10 + i / 8 % 90)).ok());
      ASSERT_TRUE(k.Append(i).ok());
    }
    auto schema =
        arrow::schema({arrow::field("flag", arrow::utf8()), arrow::field("name", arrow::utf8()),
                       arrow::field("plain", arrow::utf8()), arrow::field("code", arrow::utf8()),
                       arrow::field("k", arrow::int64())});
    auto table = arrow::Table::Make(
        schema, {flag.Finish().ValueOrDie(), name.Finish().ValueOrDie(),
                 plain.Finish().ValueOrDie(), code.Finish().ValueOrDie(), k.Finish().ValueOrDie()});
    auto properties = parquet::WriterProperties::Builder()
                          .compression(parquet::Compression::SNAPPY)
                          ->disable_dictionary("plain")
                          ->build();
    auto out = arrow::io::FileOutputStream::Open((dir_ / "t.parquet").string());
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(
        parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), *out, 1000, properties)
            .ok());
    ASSERT_TRUE((*out)->Close().ok());
  }

  std::filesystem::path dir_;
  std::shared_ptr<storage::ObjectStore> store_;
};

TEST_F(DictionaryColumnsTest, OnlyStringColumnsWithSmallDictionaries) {
  Write();
  auto table = OpenTable(store_, "t", "t.parquet", "parquet");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  // `name` is dictionary-encoded too, but its dictionary holds every value: read plainly.
  EXPECT_EQ((*table)->dictionary_columns, (std::set<std::string>{"code", "flag"}));
}

// Which decimals every file stores as integers: the ones the executor may read as decimal64.
TEST_F(DictionaryColumnsTest, IntegerDecimalsAreThoseEveryFileStoresAsIntegers) {
  arrow::Decimal128Builder p(arrow::decimal128(15, 2)), q(arrow::decimal128(7, 2)),
      big(arrow::decimal128(20, 2));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(p.Append(arrow::Decimal128(i * 101)).ok());
    ASSERT_TRUE(q.Append(arrow::Decimal128(i)).ok());
    ASSERT_TRUE(big.Append(arrow::Decimal128(i)).ok());
  }
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("p", p.type()), arrow::field("q", q.type()),
                     arrow::field("big", big.type())}),
      {p.Finish().ValueOrDie(), q.Finish().ValueOrDie(), big.Finish().ValueOrDie()});
  std::filesystem::create_directories(dir_ / "d");
  auto write = [&](const std::string& name, bool as_integers) {
    parquet::WriterProperties::Builder properties;
    if (as_integers) properties.enable_store_decimal_as_integer();
    auto out = arrow::io::FileOutputStream::Open((dir_ / name).string());
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), *out, 5,
                                           properties.build())
                    .ok());
    ASSERT_TRUE((*out)->Close().ok());
  };
  write("d/a.parquet", true);
  // INT64 and INT32 (7 digits); 20 digits do not fit 64 bits and stay bytes.
  auto one = OpenTable(store_, "t", "d/a.parquet", "parquet");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ((*one)->integer_decimal_columns, (std::set<std::string>{"p", "q"}));
  // A second file that stores them as bytes: no longer every file.
  write("d/b.parquet", false);
  auto both = OpenTable(store_, "t", "d/", "parquet");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ((*both)->files.size(), 2u);
  EXPECT_TRUE((*both)->integer_decimal_columns.empty());
}

}  // namespace
}  // namespace sluice::plan
