// Inline ABI test: real Arrow IPC input, the built library called through the exported C ABI
// with dlopen, every emitted batch decoded, and data_hash = BLAKE3(primary_key) on every row.
#include <blake3.h>
#include <gtest/gtest.h>

#include <sluice/sdk/testing.hpp>

#include "sluice/schemas/arrow.hpp"
#include "sluice/schemas/conversation/conversation_message_extracted.hpp"
#include "sluice/schemas/conversation/conversation_message_gateway.hpp"

namespace {

using sluice::schemas::Timestamp;
using namespace sluice::schemas::conversation;

std::vector<ConversationMessageGateway> Requests() {
  std::vector<ConversationMessageGateway> out;
  // Conversation A grows over three requests; B has one request with unusual content.
  std::vector<GatewayMessage> history;
  const std::vector<GatewayMessage> turns = {{"system", "Be brief.", std::nullopt},
                                             {"user", "Wie spät ist es? 🕰️", "ana"},
                                             {"assistant", "", std::nullopt}};
  for (int r = 0; r < 3; ++r) {
    history.push_back(turns[static_cast<size_t>(r)]);
    out.push_back({"req-a" + std::to_string(r), "user-1", "conv-a", "model-x",
                   Timestamp{1764486540000000 + r * 1000000}, history});
  }
  out.push_back(
      {"req-b0",
       "user-2",
       "conv-b",
       "model-y",
       Timestamp{1764486600000000},
       {{"user", std::string(100000, 'z'), std::nullopt}, {"tool", "{\"ok\":true}", "calc"}}});
  return out;
}

std::string Hex(const uint8_t* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[data[i] >> 4];
    s += digits[data[i] & 15];
  }
  return s;
}

TEST(ConversationMessageExtract, ExtractsEveryMessageWithItsHash) {
  auto transform = sluice::sdk::testing::LoadedTransform::Open(SLUICE_TRANSFORM_SO);
  ASSERT_TRUE(transform.ok()) << transform.status().ToString();
  auto requests = Requests();
  // Two input batches, to check that batches are not mixed up.
  std::vector<ConversationMessageGateway> first(requests.begin(), requests.begin() + 2);
  std::vector<ConversationMessageGateway> second(requests.begin() + 2, requests.end());
  auto schema = sluice::schemas::ArrowSchema<ConversationMessageGateway>();
  auto input = sluice::sdk::testing::ToIpc(
      schema, {*sluice::schemas::ToRecordBatch(first), *sluice::schemas::ToRecordBatch(second)});
  ASSERT_TRUE(input.ok());

  auto streams = (*transform)->Call(**input);
  ASSERT_TRUE(streams.ok()) << streams.status().ToString();
  ASSERT_EQ(streams->size(), 1u);
  std::vector<ConversationMessageExtracted> rows;
  for (const auto& batch : (*streams)[0].batches) {
    auto part = sluice::schemas::FromRecordBatch<ConversationMessageExtracted>(*batch, "output");
    ASSERT_TRUE(part.ok()) << part.status().ToString();
    rows.insert(rows.end(), part->begin(), part->end());
  }
  size_t expected_rows = 0;
  for (const auto& r : requests) expected_rows += r.messages.size();
  ASSERT_EQ(rows.size(), expected_rows);  // 1 + 2 + 3 + 2

  size_t i = 0;
  for (const auto& request : requests) {
    for (size_t pos = 0; pos < request.messages.size(); ++pos, ++i) {
      const auto& row = rows[i];
      EXPECT_EQ(row.primary_key, request.conversation_id + ":" + std::to_string(pos));
      uint8_t expected[32];
      blake3_hasher h;
      blake3_hasher_init(&h);
      blake3_hasher_update(&h, row.primary_key.data(), row.primary_key.size());
      blake3_hasher_finalize(&h, expected, 32);
      EXPECT_EQ(Hex(row.data_hash.data(), 32), Hex(expected, 32)) << row.primary_key;
      EXPECT_EQ(row.position, static_cast<int64_t>(pos));
      EXPECT_EQ(row.content, request.messages[pos].content);
      EXPECT_EQ(row.name, request.messages[pos].name);
      EXPECT_EQ(row.request_id, request.request_id);
      EXPECT_EQ(row.received_at, request.received_at);
    }
  }
  // One digest pinned independently (Python's blake3 of b"conv-a:0").
  EXPECT_EQ(rows[0].primary_key, "conv-a:0");
  EXPECT_EQ(Hex(rows[0].data_hash.data(), 32),
            "24d70f5591162c68330db50693cf2d325e7cb9b0f6cfcf4c82f8a998f716f592");
}

TEST(ConversationMessageExtract, RejectsInputWithTheWrongSchema) {
  auto transform = sluice::sdk::testing::LoadedTransform::Open(SLUICE_TRANSFORM_SO);
  ASSERT_TRUE(transform.ok());
  auto schema = arrow::schema({arrow::field("request_id", arrow::utf8())});
  arrow::StringBuilder b;
  ASSERT_TRUE(b.Append("x").ok());
  auto batch = arrow::RecordBatch::Make(schema, 1, {*b.Finish()});
  auto input = sluice::sdk::testing::ToIpc(schema, {batch});
  auto out = (*transform)->Call(**input);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("input stream: schema mismatch for "
                                        "sluice.examples.conversation.ConversationMessageGateway"),
            std::string::npos)
      << out.status().message();
}

TEST(ConversationMessageExtract, EmptyConversationIdIsAnError) {
  auto transform = sluice::sdk::testing::LoadedTransform::Open(SLUICE_TRANSFORM_SO);
  ASSERT_TRUE(transform.ok());
  auto requests = Requests();
  requests[1].conversation_id = "";
  auto input =
      sluice::sdk::testing::ToIpc(sluice::schemas::ArrowSchema<ConversationMessageGateway>(),
                                  {*sluice::schemas::ToRecordBatch(requests)});
  auto out = (*transform)->Call(**input);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("request 'req-a1' has an empty conversation_id"),
            std::string::npos)
      << out.status().message();
}

TEST(ConversationMessageExtract, NoInputBatchesGiveAnEmptyStream) {
  auto transform = sluice::sdk::testing::LoadedTransform::Open(SLUICE_TRANSFORM_SO);
  ASSERT_TRUE(transform.ok());
  auto input =
      sluice::sdk::testing::ToIpc(sluice::schemas::ArrowSchema<ConversationMessageGateway>(), {});
  auto out = (*transform)->Call(**input);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_TRUE((*out)[0].batches.empty());
  EXPECT_TRUE(
      (*out)[0].schema->Equals(*sluice::schemas::ArrowSchema<ConversationMessageExtracted>()));
}

}  // namespace
