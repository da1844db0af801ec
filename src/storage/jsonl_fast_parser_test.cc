#include "storage/jsonl_fast_parser.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "storage/jsonl_parser.h"

namespace sluice::storage {
namespace {

std::shared_ptr<arrow::Schema> RichSchema() {
  auto message =
      arrow::struct_({arrow::field("role", arrow::utf8(), /*nullable=*/false),
                      arrow::field("content", arrow::utf8()), arrow::field("name", arrow::utf8())});
  auto inner = arrow::struct_(
      {arrow::field("x", arrow::int64()), arrow::field("y", arrow::list(arrow::utf8()))});
  return arrow::schema(
      {arrow::field("b", arrow::boolean()), arrow::field("i8", arrow::int8()),
       arrow::field("i16", arrow::int16()), arrow::field("i32", arrow::int32()),
       arrow::field("i64", arrow::int64(), /*nullable=*/false), arrow::field("u8", arrow::uint8()),
       arrow::field("u16", arrow::uint16()), arrow::field("u32", arrow::uint32()),
       arrow::field("u64", arrow::uint64()), arrow::field("d", arrow::float64()),
       arrow::field("f", arrow::float32()), arrow::field("s", arrow::utf8()),
       arrow::field("ls", arrow::large_utf8()),
       arrow::field("ts", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       arrow::field("ts_s", arrow::timestamp(arrow::TimeUnit::SECOND)),
       arrow::field("ts_ns", arrow::timestamp(arrow::TimeUnit::NANO)),
       arrow::field("st", arrow::struct_(
                              {arrow::field("a", arrow::utf8(), false), arrow::field("n", inner)})),
       arrow::field("messages", arrow::list(arrow::field("item", message, false)), false),
       arrow::field("ll", arrow::list(arrow::list(arrow::int32())))},
      arrow::key_value_metadata({"origin"}, {"test"}));
}

// Every column, and every child of every struct (which Equals may not look at under a null
// parent), the same in both.
void ExpectSame(const arrow::Array& fast, const arrow::Array& arrow_reader,
                const std::string& path) {
  ASSERT_TRUE(fast.type()->Equals(*arrow_reader.type(), /*check_metadata=*/true)) << path;
  ASSERT_TRUE(fast.Equals(arrow_reader)) << path << "\nfast:\n"
                                         << fast.ToString() << "\nArrow's reader:\n"
                                         << arrow_reader.ToString();
  ASSERT_EQ(fast.null_count(), arrow_reader.null_count()) << path;
  if (fast.type_id() == arrow::Type::STRUCT) {
    const auto& f = static_cast<const arrow::StructArray&>(fast);
    const auto& a = static_cast<const arrow::StructArray&>(arrow_reader);
    for (int i = 0; i < f.num_fields(); ++i) {
      ExpectSame(*f.field(i), *a.field(i), path + "." + f.type()->field(i)->name());
    }
  } else if (fast.type_id() == arrow::Type::LIST) {
    ExpectSame(*static_cast<const arrow::ListArray&>(fast).values(),
               *static_cast<const arrow::ListArray&>(arrow_reader).values(), path + "[]");
  }
}

// `text` read by the fast path and by Arrow's reader alone, to the same batch.
void ExpectBothRead(const std::string& text, const std::shared_ptr<arrow::Schema>& schema) {
  const auto bytes = arrow::Buffer::FromString(text);
  auto fast = TryParseJsonlFast(*bytes, schema);
  ASSERT_NE(fast, nullptr) << "the fast path declined:\n" << text;
  auto reader = ParseJsonlWithArrowReader(*bytes, schema, "raw/a.jsonl", /*skip_bad=*/false);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  ASSERT_TRUE(fast->ValidateFull().ok()) << fast->ValidateFull().ToString();
  ASSERT_TRUE(fast->schema()->Equals(*schema, /*check_metadata=*/true));
  ASSERT_EQ(fast->num_rows(), reader->batch->num_rows());
  for (int i = 0; i < schema->num_fields(); ++i) {
    ExpectSame(*fast->column(i), *reader->batch->column(i), schema->field(i)->name());
  }
  auto parsed = ParseJsonl(*bytes, schema, "raw/a.jsonl", /*skip_bad=*/false);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->records, fast->num_rows());
  EXPECT_EQ(parsed->bad_records, 0);
}

TEST(JsonlFastParser, ReadsWhatArrowsReaderReads) {
  const std::string text =
      std::string(R"({"i64":1,"messages":[]})") + "\n\n" +
      R"({"b":true,"i8":-128,"i16":32767,"i32":-2147483648,)" +
      R"("i64":-9223372036854775808,"u8":255,"u16":65535,"u32":4294967295,)" +
      R"("u64":18446744073709551615,"d":-1.7976931348623157e308,)" +
      R"("s":"a\"b\\c\/d\n\t\u00e9\uD83D\uDE80 日本 \u0000x",)" +
      R"("ls":"","f":0.1,"ts":"2026-01-01T00:00:02.681327Z",)" +
      R"("ts_s":"2026-01-01 00:00:02","ts_ns":"1970-01-01T00:00:00.000000001Z",)" +
      R"("st":{"a":"q","n":{"x":-0,"y":["p",null,""]}},)" +
      R"("messages":[{"role":"user","content":"hi"},{"name":null,"role":"r"}],)" +
      R"("ll":[[1,2],[],null,[null]]})" + "\r\n" +
      // Keys in another order, spaces, and nulls everywhere they may be.
      R"(  { "messages" : [ ] , "i64" : 0 , "b" : false , "d" : 0.1 ,)" +
      R"( "st" : null , "ll" : null , "s" : null , "ts" : null }  )" + "\n" +
      R"({"i64":7,"messages":[{"role":"x","content":null,"name":"n"}],)" +
      R"("st":{"a":"w","n":null},"d":1e2,"ts":"2026-01-01T00:00:02+01:00",)" +
      R"("ts_s":"2026-01-01","u64":0,"ll":[]})" + "\n" +
      R"({"i64":8,"messages":[],"st":{"a":"z"},"d":123456789012345678901234567890,)" +
      R"("ts":"2026-01-01T00:00:02.5","i8":127,"u8":0})";
  ExpectBothRead(text, RichSchema());
}

TEST(JsonlFastParser, EmptyObjectsHaveNoRows) {
  for (const std::string text : {"", "\n", "  \n\t\r\n"}) ExpectBothRead(text, RichSchema());
}

// Lines drawn at random from the rich schema's values, NULLs and absences.
TEST(JsonlFastParser, ReadsRandomLinesAsArrowsReaderDoes) {
  std::mt19937_64 rng(20261205);
  auto pick = [&](const std::vector<std::string>& options) {
    return options[rng() % options.size()];
  };
  const std::vector<std::string> strings = {R"("")", R"("plain")", R"("é日本🚀")",
                                            R"("q\"\\\n\u0041\ud83d\ude80")", "null"};
  std::string text;
  for (int line = 0; line < 2000; ++line) {
    std::vector<std::string> fields = {"\"i64\":" + std::to_string(static_cast<int64_t>(rng())),
                                       "\"messages\":[]"};
    if (rng() % 2) fields.push_back("\"b\":" + pick({"true", "false", "null"}));
    if (rng() % 2) fields.push_back("\"i8\":" + pick({"-128", "0", "127", "null", "-0"}));
    if (rng() % 2) fields.push_back("\"u32\":" + std::to_string(rng() % 4294967296));
    if (rng() % 2) {
      fields.push_back("\"d\":" + pick({"0", "-0.0", "1.5e-300", "3.141592653589793", "1E5",
                                        "-2.5E-3", "9007199254740993", "null"}));
    }
    if (rng() % 2) {
      fields.push_back("\"f\":" + pick({"0.1", "3.4028235e38", "1e-45", "-7", "16777217", "null"}));
    }
    if (rng() % 2) fields.push_back("\"s\":" + pick(strings));
    if (rng() % 2) fields.push_back("\"ls\":" + pick(strings));
    if (rng() % 2) {
      fields.push_back("\"ts\":" +
                       pick({R"("2026-12-05T01:02:03.456789Z")", R"("1969-12-31T23:59:59.999999Z")",
                             R"("2026-12-05")", "null"}));
    }
    if (rng() % 3 == 0) {
      fields.push_back("\"st\":" + pick({"null", R"({"a":"x"})", R"({"a":"x","n":null})",
                                         R"({"n":{"x":1,"y":null},"a":"y"})",
                                         R"({"a":"z","n":{"y":["a",null]}})"}));
    }
    if (rng() % 3 == 0) {
      fields[1] = "\"messages\":" +
                  pick({R"([{"role":"a"}])",
                        R"([{"role":"a","content":"c","name":null},{"role":"b"}])", "[]"});
    }
    if (rng() % 3 == 0) fields.push_back("\"ll\":" + pick({"null", "[]", "[[1],null,[2,null]]"}));
    std::shuffle(fields.begin(), fields.end(), rng);
    text += "{";
    for (size_t i = 0; i < fields.size(); ++i) text += (i > 0 ? "," : "") + fields[i];
    text += "}\n";
  }
  ExpectBothRead(text, RichSchema());
}

// Lines Arrow's reader rejects (or may read differently): ParseJsonl reads or rejects each as
// Arrow's reader alone does.
TEST(JsonlFastParser, DeclinesWhatItDoesNotReadExactly) {
  using namespace std::string_literals;
  const std::string good = R"({"i64":1,"messages":[]})";
  const std::vector<std::string> lines = {
      R"({"i64":1,"messages":[],"zz":1})",                   // unknown field
      R"({"i64":1,"messages":[],"st":{"a":"x","zz":1}})",    // unknown nested field
      R"({"i64":"1","messages":[]})",                        // string for an integer
      R"({"i64":1,"messages":[],"s":1})",                    // number for a string
      R"({"i64":1,"messages":[],"ts":1})",                   // number for a timestamp
      R"({"i64":1,"messages":{}})",                          // object for a list
      R"({"i64":1,"messages":[],"i8":128})",                 // out of range
      R"({"i64":1,"messages":[],"u8":-1})",                  // negative unsigned
      R"({"i64":1.0,"messages":[]})",                        // fraction for an integer
      R"({"i64":1e2,"messages":[]})",                        // exponent for an integer
      R"({"i64":1,"i64":2,"messages":[]})",                  // repeated key
      R"({"i64":1,"messages":[]} {"i64":2,"messages":[]})",  // two objects on a line
      R"({"i64":1,"messages":[]} x)",                        // text after the object
      R"([1,2])",                                            // not an object
      R"({"i64":1,"messages":[],})",                         // not JSON
      R"({"i64":1,"messages":[],"s":"\x"})",                 // a bad escape
      R"({"i64":1,"messages":[],"s":"\uD800"})",             // a lone surrogate
      R"({"i64":1,"messages":[],"s":"\uDC00"})",             // a lone low surrogate
      R"({"messages":[]})",                                  // a non-nullable field absent
      R"({"i64":null,"messages":[]})",                       // ... or null
      R"({"i64":1,"messages":[{"content":"c"}]})",           // ... in a list's struct
      R"({"i64":1,"messages":[],"st":{}})",                  // ... in a struct
      R"({"i64":1,"messages":[],"ts":"yesterday"})",         // not a timestamp
      R"({"i64":1,"messages":[],"d":1e400})",                // out of a double's range
      R"({"i64":1,"messages":[],"d":NaN})",                  // not JSON's
      "{\"i64\":1,\"messages\":[],\"s\":\"a\"}\0"s,          // a NUL after the object
      "{\"i64\":1,\"messages\":[],\"s\":\"a\0b\"}"s,         // a NUL in a string
      R"({"i64":1,"messages":[],"b":1})",                    // number for a boolean
      R"({"i64":1,"messages":[],"f":1e39})",                 // out of a float's range
      R"({"i64":1,"messages":[],"s":"\uDC00\uD800"})",       // surrogates the wrong way round
      "{\"i64\":1,\"messages\":[],\"s\":\"\xff\"}",          // not UTF-8
  };
  const auto schema = RichSchema();
  for (const auto& line : lines) {
    const std::string text = good + "\n" + line + "\n" + good + "\n";
    const auto bytes = arrow::Buffer::FromString(text);
    // Where Arrow's reader fails, the fast path must not read anything.
    if (!ParseJsonlWithArrowReader(*bytes, schema, "raw/a.jsonl", false).ok()) {
      EXPECT_EQ(TryParseJsonlFast(*bytes, schema), nullptr) << line;
    }
    for (const bool skip_bad : {false, true}) {
      auto parsed = ParseJsonl(*bytes, schema, "raw/a.jsonl", skip_bad);
      auto reader = ParseJsonlWithArrowReader(*bytes, schema, "raw/a.jsonl", skip_bad);
      ASSERT_EQ(parsed.ok(), reader.ok()) << line;
      if (!parsed.ok()) {
        EXPECT_EQ(parsed.status().ToString(), reader.status().ToString());
        EXPECT_NE(parsed.status().message().find("object 'raw/a.jsonl' line 2"), std::string::npos)
            << parsed.status().ToString();
      } else {
        EXPECT_TRUE(parsed->batch->Equals(*reader->batch, /*check_metadata=*/true,
                                          arrow::EqualOptions().nans_equal(true)))
            << line;
        EXPECT_EQ(parsed->bad_records, reader->bad_records);
      }
    }
  }
}

TEST(JsonlFastParser, TakesOnlyTheTypesItReadsExactly) {
  EXPECT_TRUE(JsonlFastPathSupports(*RichSchema()));
  for (const auto& type :
       {arrow::float16(), arrow::date32(), arrow::decimal128(10, 2), arrow::binary(),
        arrow::dictionary(arrow::int32(), arrow::utf8()), arrow::large_list(arrow::utf8()),
        arrow::map(arrow::utf8(), arrow::utf8()),
        arrow::struct_({arrow::field("f", arrow::date32())})}) {
    const auto schema = arrow::schema({arrow::field("x", type)});
    EXPECT_FALSE(JsonlFastPathSupports(*schema)) << type->ToString();
    const auto bytes = arrow::Buffer::FromString("{}\n");
    EXPECT_EQ(TryParseJsonlFast(*bytes, schema), nullptr);
  }
  // Two fields of one name: which one a key means is Arrow's reader's to say.
  const auto twice =
      arrow::schema({arrow::field("x", arrow::utf8()), arrow::field("x", arrow::utf8())});
  EXPECT_FALSE(JsonlFastPathSupports(*twice));
  EXPECT_FALSE(JsonlFastPathSupports(
      *arrow::schema({arrow::field("s", arrow::struct_({arrow::field("y", arrow::int64()),
                                                        arrow::field("y", arrow::int64())}))})));
}

}  // namespace
}  // namespace sluice::storage
