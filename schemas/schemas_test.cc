// The conversation schemas through every projection, and a CBOR cross-check with Python's
// cbor2 on bytes written by each side.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sluice/schemas/arrow.hpp"
#include "sluice/schemas/codec.hpp"
#include "sluice/schemas/conversation/conversation_message_extracted.hpp"
#include "sluice/schemas/conversation/conversation_message_gateway.hpp"
#include "sluice/schemas/sql.hpp"

namespace sluice::schemas {
namespace {

using conversation::ConversationMessageExtracted;
using conversation::ConversationMessageGateway;
using conversation::GatewayMessage;

ConversationMessageGateway Sample() {
  ConversationMessageGateway g;
  g.request_id = "req-0001";
  g.user_id = "user-7";
  g.conversation_id = "conv-42";
  g.model = "model-large";
  g.received_at = Timestamp{1764486540123456};  // 2025-11-30T07:09:00.123456Z
  g.messages = {{"system", "You are terse.", std::nullopt},
                {"user", "Grüße, 世界! 🚀", std::string("ana")},
                {"assistant", "", std::nullopt},
                {"user", std::string(5000, 'x'), std::nullopt}};
  return g;
}

ConversationMessageExtracted SampleExtracted() {
  ConversationMessageExtracted e;
  e.primary_key = "conv-42:1";
  for (size_t i = 0; i < e.data_hash.size(); ++i) e.data_hash[i] = static_cast<uint8_t>(i * 7);
  e.conversation_id = "conv-42";
  e.user_id = "user-7";
  e.position = 1;
  e.role = "user";
  e.content = "Grüße";
  e.name = "ana";
  e.request_id = "req-0001";
  e.received_at = Timestamp{-1};  // just before the epoch
  return e;
}

TEST(Timestamp, FormatAndParse) {
  EXPECT_EQ(FormatTimestamp(Timestamp{0}), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimestamp(Timestamp{1764486540123456}), "2025-11-30T07:09:00.123456Z");
  EXPECT_EQ(FormatTimestamp(Timestamp{-1}), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(ParseTimestamp("2025-11-30T07:09:00.123456Z")->micros, 1764486540123456);
  EXPECT_EQ(ParseTimestamp("2025-11-30T08:09:00.123456+01:00")->micros, 1764486540123456);
  EXPECT_EQ(ParseTimestamp("2025-11-30T07:09:00Z")->micros, 1764486540000000);
  EXPECT_EQ(ParseTimestamp("2025-11-30T07:09:00.1Z")->micros, 1764486540100000);
  EXPECT_EQ(ParseTimestamp("2025-11-30T07:09:00.123456789Z")->micros, 1764486540123456);
  for (const char* bad : {"", "2025-11-30", "2025-11-30T07:09:00", "2025-13-01T00:00:00Z",
                          "2025-11-30T07:09:00.Z", "2025-11-30T07:09:00Zjunk", "yesterday"}) {
    EXPECT_FALSE(ParseTimestamp(bad).ok()) << bad;
  }
}

TEST(Codec, JsonRoundTrip) {
  const auto g = Sample();
  const std::string json = ToJson(g);
  EXPECT_NE(json.find("\"received_at\":\"2025-11-30T07:09:00.123456Z\""), std::string::npos);
  auto back = FromJson<ConversationMessageGateway>(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, g);

  const auto e = SampleExtracted();
  auto e_back = FromJson<ConversationMessageExtracted>(ToJson(e));
  ASSERT_TRUE(e_back.ok()) << e_back.status().ToString();
  EXPECT_EQ(*e_back, e);
}

TEST(Codec, CborRoundTrip) {
  const auto g = Sample();
  auto bytes = ToCbor(g);
  auto back = FromCbor<ConversationMessageGateway>(bytes.data(), bytes.size());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, g);
  const auto e = SampleExtracted();
  auto eb = ToCbor(e);
  auto e_back = FromCbor<ConversationMessageExtracted>(eb.data(), eb.size());
  ASSERT_TRUE(e_back.ok()) << e_back.status().ToString();
  EXPECT_EQ(*e_back, e);
}

TEST(Codec, StrictDecodingNamesThePath) {
  struct Case {
    std::string json, expect;
  };
  const std::string base = R"({"request_id":"r","user_id":"u","conversation_id":"c","model":"m",)"
                           R"("received_at":"2025-11-30T07:09:00Z",)";
  for (const Case& c :
       std::vector<Case>{{"[]", "line 3: $: expected an object, got array"},
                         {base + R"("messages":[{"role":"user","content":"hi","nmae":"x"}]})",
                          "line 3: $.messages[0].nmae: unknown field"},
                         {base + R"("messages":[{"role":"user"}]})",
                          "line 3: $.messages[0].content: missing required field"},
                         {base + R"("messages":[{"role":7,"content":"x"}]})",
                          "line 3: $.messages[0].role: expected a string, got number"},
                         {R"({"request_id":"r","user_id":"u","conversation_id":"c","model":"m",)"
                          R"("received_at":"soon","messages":[]})",
                          "line 3: $.received_at: 'soon' is not an RFC 3339 timestamp"},
                         {"{not json", "line 3: not valid JSON"}}) {
    auto r = FromJson<ConversationMessageGateway>(c.json, "line 3");
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().message(), c.expect);
  }
}

TEST(Codec, MalformedCborIsAnErrorNotACrash) {
  auto bytes = ToCbor(Sample());
  for (size_t cut = 0; cut < bytes.size(); cut += 97) {
    auto r = FromCbor<ConversationMessageGateway>(bytes.data(), cut, "object.cbor");
    EXPECT_FALSE(r.ok()) << cut;
  }
  std::vector<uint8_t> flipped = bytes;
  flipped[0] ^= 0xff;
  EXPECT_FALSE(FromCbor<ConversationMessageGateway>(flipped.data(), flipped.size()).ok());
}

TEST(Arrow, SchemaProjection) {
  auto schema = ArrowSchema<ConversationMessageGateway>();
  EXPECT_EQ(schema->ToString(/*show_metadata=*/false),
            "request_id: string not null\n"
            "user_id: string not null\n"
            "conversation_id: string not null\n"
            "model: string not null\n"
            "received_at: timestamp[us, tz=UTC] not null\n"
            "messages: list<item: struct<role: string not null, content: string not null, name: "
            "string> not null> not null");
  EXPECT_EQ(schema->metadata()->Get("sluice.schema").ValueOrDie(),
            ConversationMessageGateway::kTypeId);
  auto out = ArrowSchema<ConversationMessageExtracted>();
  EXPECT_EQ(out->GetFieldByName("data_hash")->type()->ToString(), "fixed_size_binary[32]");
  EXPECT_TRUE(out->GetFieldByName("name")->nullable());
  EXPECT_FALSE(out->GetFieldByName("position")->nullable());
}

TEST(Arrow, BatchRoundTrip) {
  std::vector<ConversationMessageGateway> rows = {Sample(), Sample()};
  rows[1].request_id = "req-0002";
  rows[1].messages.pop_back();
  auto batch = ToRecordBatch(rows);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_TRUE((*batch)->ValidateFull().ok());
  EXPECT_EQ((*batch)->num_rows(), 2);
  auto back = FromRecordBatch<ConversationMessageGateway>(**batch, "batch");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, rows);
}

TEST(Arrow, WrongSchemaAndNullsAreNamed) {
  auto batch = *ToRecordBatch(std::vector<ConversationMessageExtracted>{SampleExtracted()});
  auto wrong = FromRecordBatch<ConversationMessageGateway>(*batch, "input stream");
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(wrong.status().IsTypeError());
  EXPECT_NE(wrong.status().message().find(
                "input stream: schema mismatch for "
                "sluice.examples.conversation.ConversationMessageGateway: expected [request_id: "
                "string, "),
            std::string::npos)
      << wrong.status().message();
  EXPECT_NE(wrong.status().message().find("got [primary_key: string, data_hash: "),
            std::string::npos);

  // A null in a non-optional column.
  arrow::StringBuilder b;
  ASSERT_TRUE(b.AppendNull().ok());
  auto columns = batch->columns();
  columns[0] = *b.Finish();
  auto with_null = arrow::RecordBatch::Make(batch->schema(), 1, columns);
  auto r = FromRecordBatch<ConversationMessageExtracted>(*with_null, "part-3.arrow");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "part-3.arrow: column primary_key row 0 is null but the field is not optional");
}

TEST(Sql, CreateTable) {
  EXPECT_EQ(CreateTableSql<ConversationMessageExtracted>("messages"),
            "CREATE TABLE messages (\n"
            "  primary_key TEXT NOT NULL,\n"
            "  data_hash BYTEA NOT NULL,\n"
            "  conversation_id TEXT NOT NULL,\n"
            "  user_id TEXT NOT NULL,\n"
            "  position BIGINT NOT NULL,\n"
            "  role TEXT NOT NULL,\n"
            "  content TEXT NOT NULL,\n"
            "  name TEXT,\n"
            "  request_id TEXT NOT NULL,\n"
            "  received_at TIMESTAMPTZ NOT NULL\n"
            ");");
}

// Python's cbor2 decodes our bytes to the same values, and we decode the bytes cbor2 writes.
TEST(Codec, CborCrossCheckWithPythonCbor2) {
  const std::string dir = ::testing::TempDir();
  const std::string ours = dir + "/sluice-gateway.cbor", theirs = dir + "/cbor2-gateway.cbor";
  const auto g = Sample();
  {
    auto bytes = ToCbor(g);
    std::ofstream(ours, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  const std::string script = std::string(SLUICE_SOURCE_DIR) + "/schemas/cbor2_crosscheck.py";
  const std::string cmd =
      std::string(SLUICE_VENV_BIN) + "/python " + script + " " + ours + " " + theirs;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(theirs, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  auto back = FromCbor<ConversationMessageGateway>(bytes.data(), bytes.size(), theirs);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  auto expected = g;
  expected.request_id = "req-from-cbor2";  // the script changes one field
  EXPECT_EQ(*back, expected);
}

}  // namespace
}  // namespace sluice::schemas
