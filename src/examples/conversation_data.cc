#include "examples/conversation_data.h"

#include <cstdio>
#include <vector>

#include "common/progress.h"
#include "common/splitmix64.h"
#include "sluice/schemas/codec.hpp"
#include "sluice/schemas/conversation/conversation_message_gateway.hpp"

namespace sluice::examples {

namespace {

using schemas::conversation::ConversationMessageGateway;
using schemas::conversation::GatewayMessage;

using Rng = SplitMix64;

const char* const kWords[] = {
    "the",    "data",    "pipeline", "arrow",  "batch",  "query",     "why",      "does",
    "my",     "join",    "spill",    "to",     "disk",   "when",      "memory",   "is",
    "free",   "please",  "explain",  "naïve",  "Grüße",  "café",      "日本語",   "数据",
    "流水线", "привет",  "мир",      "مرحبا",  "العالم", "ñandú",     "🚀",        "🙂",
    "résumé", "Straße",  "ok",       "thanks", "can",    "you",       "help",     "with",
    "SQL",    "Parquet", "schema",   "column", "null",   "tab\there", "quote\"d", "new\nline"};
const char* const kModels[] = {"model-large", "model-small", "model-code"};
const char* const kSystem[] = {"You are a helpful assistant.", "Answer briefly.",
                               "Du bist ein hilfreicher Assistent.", "回答要简洁。"};

std::string Sentence(Rng& rng) {
  if (rng.Chance(3)) return "";  // empty messages happen
  const size_t n_words = sizeof(kWords) / sizeof(kWords[0]);
  std::string out;
  size_t words = 3 + rng.Below(25);
  if (rng.Chance(1)) words = 2000 + rng.Below(6000);  // a very long message
  for (size_t i = 0; i < words; ++i) {
    if (i > 0) out += ' ';
    out += kWords[rng.Below(n_words)];
  }
  return out;
}

struct Conversation {
  std::string id;
  std::string user_id;
  std::string model;
  std::vector<GatewayMessage> history;
  /// Messages sent in this conversation's latest request: its distinct rows after dedup.
  int64_t sent = 0;
};

}  // namespace

arrow::Result<ConversationDataSummary> WriteConversationData(
    storage::ObjectStore* store, const ConversationDataOptions& options) {
  if (options.objects < 0 || options.requests_per_object < 1) {
    return arrow::Status::Invalid(
        "example data needs objects >= 0 and requests per object >= 1, "
        "got ",
        options.objects, " and ", options.requests_per_object);
  }
  Rng rng(options.seed);
  ConversationDataSummary summary;
  std::vector<Conversation> active;
  int64_t request_index = 0;
  int64_t clock_micros = 1767225600000000;  // 2026-01-01T00:00:00Z

  Progress::Options progress_options;
  progress_options.total = options.objects;
  progress_options.unit = "objects";
  Progress progress("example-data", progress_options);

  for (int64_t object = 0; object < options.objects; ++object) {
    std::string jsonl;
    for (int64_t r = 0; r < options.requests_per_object; ++r, ++request_index) {
      // Start a new conversation now and then (its first request is this one); otherwise
      // continue a recent one.
      const bool start = active.empty() || rng.Chance(30);
      if (start) {
        Conversation c;
        c.id = "conv-" + std::to_string(summary.conversations++);
        c.user_id = "user-" + std::to_string(rng.Below(500));
        c.model = kModels[rng.Below(3)];
        if (rng.Chance(50)) c.history.push_back({"system", kSystem[rng.Below(4)], std::nullopt});
        active.push_back(std::move(c));
        if (active.size() > 64) {
          summary.distinct_messages += active.front().sent;
          active.erase(active.begin());
        }
      }
      Conversation& c = start ? active.back() : active[rng.Below(active.size())];
      if (!c.history.empty() && c.history.back().role == "assistant" && rng.Chance(15)) {
        c.history.push_back({"tool", "{\"result\": " + std::to_string(rng.Below(1000)) + "}",
                             std::string("calculator")});
      }
      c.history.push_back({"user", Sentence(rng),
                           rng.Chance(10)
                               ? std::optional<std::string>("alias-" + std::to_string(rng.Below(9)))
                               : std::nullopt});
      clock_micros += 500000 + static_cast<int64_t>(rng.Below(2500000));
      char request_id[64];
      std::snprintf(request_id, sizeof(request_id), "req-%08lld",
                    static_cast<long long>(request_index));
      ConversationMessageGateway request{
          request_id, c.user_id, c.id, c.model, schemas::Timestamp{clock_micros}, c.history};
      jsonl += schemas::ToJson(request);
      jsonl += '\n';
      summary.requests++;
      summary.messages += static_cast<int64_t>(c.history.size());
      c.sent = static_cast<int64_t>(c.history.size());
      // The reply is part of the history the next request of this conversation repeats.
      c.history.push_back({"assistant", Sentence(rng), std::nullopt});
    }
    char name[64];
    std::snprintf(name, sizeof(name), "gateway-%05lld.jsonl", static_cast<long long>(object));
    summary.bytes += static_cast<int64_t>(jsonl.size());
    ARROW_RETURN_NOT_OK(
        store->Put(options.prefix + name, arrow::Buffer::FromString(std::move(jsonl))));
    summary.objects++;
    progress.Advance(1);
  }
  progress.Finish();
  for (const Conversation& c : active) summary.distinct_messages += c.sent;
  return summary;
}

}  // namespace sluice::examples
