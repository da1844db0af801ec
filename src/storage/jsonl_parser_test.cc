#include "storage/jsonl_parser.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

namespace sluice::storage {
namespace {

std::shared_ptr<arrow::Schema> TestSchema() {
  auto message = arrow::struct_({arrow::field("role", arrow::utf8(), /*nullable=*/false),
                                 arrow::field("name", arrow::utf8())});
  return arrow::schema(
      {arrow::field("id", arrow::int64(), /*nullable=*/false), arrow::field("note", arrow::utf8()),
       arrow::field("meta", arrow::struct_({arrow::field("source", arrow::utf8(), false)})),
       arrow::field("messages", arrow::list(arrow::field("item", message, false)), false)});
}

arrow::Result<ParsedJsonl> Parse(const std::string& text, bool skip_bad = false) {
  return ParseJsonl(*arrow::Buffer::FromString(text), TestSchema(), "raw/a.jsonl", skip_bad);
}

void ExpectError(const std::string& text, const std::string& expected) {
  auto parsed = Parse(text);
  ASSERT_FALSE(parsed.ok()) << text;
  EXPECT_TRUE(parsed.status().IsInvalid());
  EXPECT_NE(parsed.status().message().find(expected), std::string::npos)
      << parsed.status().message();
}

const char kGood[] = R"({"id":1,"messages":[{"role":"user","name":null}]})";

TEST(JsonlParser, ParsesAgainstTheSchemaWithNullsWhereAllowed) {
  auto parsed =
      Parse(std::string(kGood) + "\n\n" + R"({"id":2,"note":"é","meta":null,"messages":[]})" +
            "\r\n" + R"(  {"id":3,"meta":{"source":"s"},"messages":[{"role":"a"}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->records, 3);
  EXPECT_EQ(parsed->bad_records, 0);
  ASSERT_TRUE(parsed->batch->schema()->Equals(*TestSchema(), /*check_metadata=*/true));
  ASSERT_TRUE(parsed->batch->ValidateFull().ok());
  EXPECT_EQ(parsed->batch->num_rows(), 3);
  // A null struct whose child is non-nullable is fine: the child is not reachable.
  EXPECT_TRUE(parsed->batch->GetColumnByName("meta")->IsNull(1));
  const auto& note = static_cast<const arrow::StringArray&>(*parsed->batch->column(1));
  EXPECT_TRUE(note.IsNull(0));
  EXPECT_EQ(note.GetView(1), "é");
  EXPECT_TRUE(note.IsNull(2));
}

TEST(JsonlParser, EmptyAndBlankObjectsHaveNoRows) {
  for (const std::string text : {"", "\n", "  \n\t\n"}) {
    auto parsed = Parse(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->batch->num_rows(), 0);
    EXPECT_TRUE(parsed->batch->schema()->Equals(*TestSchema()));
  }
}

TEST(JsonlParser, ErrorsNameTheObjectLineAndField) {
  const std::string good = std::string(kGood) + "\n";
  ExpectError(good + "\n" + R"({"messages":[]})",
              "object 'raw/a.jsonl' line 3: field 'id' is null or missing");
  ExpectError(good + R"({"id":null,"messages":[]})", "line 2: field 'id' is null or missing");
  ExpectError(good + R"({"id":2,"messages":[{"name":"n"}]})",
              "line 2: field 'messages[].role' is null or missing");
  ExpectError(good + R"({"id":2,"meta":{},"messages":[]})",
              "line 2: field 'meta.source' is null or missing");
  ExpectError(good + R"({"id":2,"messages":[],"colour":"red"})",
              "line 2: field 'colour' is not in the schema");
  ExpectError(good + R"({"id":2,"messages":[{"role":"a","extra":1}]})",
              "line 2: field 'messages[].extra' is not in the schema");
  ExpectError(good + R"({"id":"two","messages":[]})", "line 2: ");
  ExpectError(good + R"({"id":2.5,"messages":[]})", "line 2: ");
  ExpectError(good + "[1,2]", "line 2: ");
  ExpectError(good + "{\"id\":2,", "line 2: not valid JSON");
  ExpectError(good + "{\"id\":2,\"note\":\"\xff\",\"messages\":[]}", "line 2: not valid UTF-8");
  ExpectError(good + kGood + " " + kGood, "line 2: expected one JSON object per line");
  // One object over two lines (pretty-printed) is two bad lines, not one record.
  ExpectError(good + "{\"id\":2,\n\"messages\":[]}", "line 2: not valid JSON");
}

TEST(JsonlParser, SkipCountsBadLinesAndKeepsTheRestInOrder) {
  std::string text;
  for (int i = 0; i < 40; ++i) {
    if (i % 7 == 3) {
      text += R"({"id":"bad","messages":[]})";
    } else {
      text += R"({"id":)" + std::to_string(i) + R"(,"messages":[]})";
    }
    text += "\n";
  }
  auto parsed = Parse(text, /*skip_bad=*/true);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->bad_records, 6);
  EXPECT_EQ(parsed->records, 34);
  const auto& ids = static_cast<const arrow::Int64Array&>(*parsed->batch->column(0));
  int64_t row = 0;
  for (int i = 0; i < 40; ++i) {
    if (i % 7 != 3) {
      EXPECT_EQ(ids.Value(row++), i);
    }
  }
  // Without skip, the first bad line fails the object.
  ExpectError(text, "line 4: ");
}

}  // namespace
}  // namespace sluice::storage
