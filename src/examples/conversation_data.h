// Deterministic, realistic example data for the maintained conversation pipeline: JSONL objects
// of ConversationMessageGateway requests, as a model gateway would log them.
//
// Many conversations run at once; each request repeats its conversation's history so far plus a
// new user message, so the same message appears in many requests (what dedup removes). Content
// mixes languages and scripts, emoji, empty messages, tool messages with names, and a few very
// long messages. The same options always give the same bytes.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <memory>
#include <string>

#include "storage/object_store.h"

namespace sluice::examples {

struct ConversationDataOptions {
  int64_t objects = 50;
  int64_t requests_per_object = 100;
  uint64_t seed = 7;
  /// Key prefix; objects are named <prefix>gateway-00000.jsonl, ...
  std::string prefix = "raw/conversations/";
};

struct ConversationDataSummary {
  int64_t objects = 0;
  int64_t requests = 0;
  int64_t conversations = 0;
  /// Messages summed over requests, repeats included.
  int64_t messages = 0;
  /// Distinct (conversation, position) pairs: the row count after dedup.
  int64_t distinct_messages = 0;
  int64_t bytes = 0;
};

/// Generates the objects and writes each atomically into `store`.
arrow::Result<ConversationDataSummary> WriteConversationData(
    storage::ObjectStore* store, const ConversationDataOptions& options);

}  // namespace sluice::examples
