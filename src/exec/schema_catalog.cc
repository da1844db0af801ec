#include "exec/schema_catalog.h"

#include <arrow/util/utf8.h>

#include <string_view>

#include "sluice/schemas/arrow.hpp"
#include "sluice/schemas/codec.hpp"
#include "sluice/schemas/conversation/conversation_message_extracted.hpp"
#include "sluice/schemas/conversation/conversation_message_gateway.hpp"

namespace sluice::exec {

namespace {

template <typename Record>
arrow::Result<ParsedObject> ParseJsonl(const arrow::Buffer& bytes, const std::string& object,
                                       bool skip_bad) {
  // Arrow's UTF-8 validator reads tables that must be built once before its first use.
  static const bool utf8_ready = (arrow::util::InitializeUTF8(), true);
  (void)utf8_ready;
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()),
                              static_cast<size_t>(bytes.size()));
  std::vector<Record> rows;
  ParsedObject out;
  size_t start = 0;
  for (int64_t line = 1; start < text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view content = text.substr(start, end - start);
    start = end + 1;
    if (!content.empty() && content.back() == '\r') content.remove_suffix(1);
    if (content.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank line
    const std::string where = "object '" + object + "' line " + std::to_string(line);
    arrow::Status st;
    if (!arrow::util::ValidateUTF8(reinterpret_cast<const uint8_t*>(content.data()),
                                   static_cast<int64_t>(content.size()))) {
      st = arrow::Status::Invalid(where, ": not valid UTF-8");
    } else {
      auto record = schemas::FromJson<Record>(content, where);
      if (record.ok()) {
        rows.push_back(*std::move(record));
        continue;
      }
      st = record.status();
    }
    if (!skip_bad) return st;
    out.bad_records++;
  }
  out.records = static_cast<int64_t>(rows.size());
  ARROW_ASSIGN_OR_RAISE(out.batch, schemas::ToRecordBatch(rows));
  return out;
}

template <typename Record>
SchemaEntry Entry() {
  return {Record::kTypeId, schemas::ArrowSchema<Record>(), &ParseJsonl<Record>};
}

const std::vector<SchemaEntry>& Catalog() {
  static const std::vector<SchemaEntry> catalog = {
      Entry<schemas::conversation::ConversationMessageGateway>(),
      Entry<schemas::conversation::ConversationMessageExtracted>(),
  };
  return catalog;
}

}  // namespace

arrow::Result<const SchemaEntry*> FindSchema(const std::string& type_id) {
  std::string known;
  for (const SchemaEntry& e : Catalog()) {
    if (e.type_id == type_id) return &e;
    known += (known.empty() ? "" : ", ") + e.type_id;
  }
  return arrow::Status::Invalid("schema '", type_id,
                                "' is not known to this sluice (known: ", known, ")");
}

}  // namespace sluice::exec
