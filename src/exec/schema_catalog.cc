#include "exec/schema_catalog.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/json/api.h>
#include <arrow/util/utf8.h>

#include <string_view>

#include "sluice/schemas/arrow.hpp"
#include "sluice/schemas/codec.hpp"
#include "sluice/schemas/conversation/conversation_message_extracted.hpp"
#include "sluice/schemas/conversation/conversation_message_gateway.hpp"

namespace sluice::exec {

namespace {

void EnsureUtf8Tables() {
  // Arrow's UTF-8 validator reads tables that must be built once before its first use.
  static const bool ready = (arrow::util::InitializeUTF8(), true);
  (void)ready;
}

// The strict, line-at-a-time parser: slow, but its errors name the line and the field. It runs
// when the fast path below fails or meets a bad line, and for on_error = "skip".
template <typename Record>
arrow::Result<ParsedObject> ParseJsonlStrict(const arrow::Buffer& bytes, const std::string& object,
                                             bool skip_bad) {
  EnsureUtf8Tables();
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

// True when a non-nullable field (at any depth) holds a null: Arrow's JSON reader leaves a
// missing field null even where the schema forbids it.
bool HasForbiddenNulls(const arrow::Array& array, const arrow::Field& field) {
  if (!field.nullable() && array.null_count() > 0) return true;
  if (array.type_id() == arrow::Type::STRUCT) {
    const auto& st = static_cast<const arrow::StructArray&>(array);
    for (int i = 0; i < st.num_fields(); ++i) {
      if (HasForbiddenNulls(*st.field(i), *st.type()->field(i))) return true;
    }
  } else if (array.type_id() == arrow::Type::LIST) {
    const auto& list = static_cast<const arrow::ListArray&>(array);
    if (HasForbiddenNulls(*list.values(), *list.type()->field(0))) return true;
  }
  return false;
}

// The fast path: Arrow's JSON reader against the explicit schema, unknown fields refused. Any
// sign of a problem sends the object to the strict parser, which finds and names the line.
template <typename Record>
arrow::Result<ParsedObject> ParseJsonl(const arrow::Buffer& bytes, const std::string& object,
                                       bool skip_bad) {
  EnsureUtf8Tables();
  static const std::shared_ptr<arrow::Schema> schema = schemas::ArrowSchema<Record>();
  if (skip_bad || !arrow::util::ValidateUTF8(bytes.data(), bytes.size())) {
    return ParseJsonlStrict<Record>(bytes, object, skip_bad);
  }
  arrow::json::ReadOptions read = arrow::json::ReadOptions::Defaults();
  read.use_threads = false;  // parallelism comes from tasks
  read.block_size = static_cast<int32_t>(std::min<int64_t>(bytes.size() + 1, 1 << 30));
  arrow::json::ParseOptions parse = arrow::json::ParseOptions::Defaults();
  parse.explicit_schema = schema;
  parse.unexpected_field_behavior = arrow::json::UnexpectedFieldBehavior::Error;
  auto buffer = std::make_shared<arrow::Buffer>(bytes.data(), bytes.size());
  auto reader = arrow::json::TableReader::Make(
      arrow::default_memory_pool(), std::make_shared<arrow::io::BufferReader>(buffer), read, parse);
  if (!reader.ok()) return ParseJsonlStrict<Record>(bytes, object, skip_bad);
  auto table = (*reader)->Read();
  if (!table.ok()) return ParseJsonlStrict<Record>(bytes, object, skip_bad);
  auto batch = (*table)->CombineChunksToBatch();
  if (!batch.ok()) return ParseJsonlStrict<Record>(bytes, object, skip_bad);
  for (int i = 0; i < schema->num_fields(); ++i) {
    if (HasForbiddenNulls(*(*batch)->column(i), *schema->field(i))) {
      return ParseJsonlStrict<Record>(bytes, object, skip_bad);
    }
  }
  ParsedObject out;
  out.records = (*batch)->num_rows();
  // Same columns and types; the schema record's own field flags and metadata.
  out.batch = arrow::RecordBatch::Make(schema, (*batch)->num_rows(), (*batch)->columns());
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
