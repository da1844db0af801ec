#include "plan/cbor_fields.h"

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>

#include <algorithm>
#include <cstring>

namespace sluice::plan {

using json = nlohmann::json;

std::vector<uint8_t> WithMagic(const char* magic, const json& doc) {
  std::vector<uint8_t> out(magic, magic + std::strlen(magic));
  std::vector<uint8_t> body = json::to_cbor(doc);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

arrow::Result<json> BodyAfterMagic(const uint8_t* data, size_t size, const char* magic,
                                   const char* family, int max_depth) {
  const size_t magic_len = std::strlen(magic);
  const std::string expected(magic, magic_len - 1);  // without the newline
  if (size < magic_len || std::memcmp(data, magic, magic_len) != 0) {
    // Name what we found when it looks like another version of our own format.
    const std::string head(reinterpret_cast<const char*>(data), std::min<size_t>(size, 24));
    if (head.rfind(family, 0) == 0) {
      return arrow::Status::Invalid("plan bytes are format '", head.substr(0, head.find('\n')),
                                    "'; this sluice reads only ", expected);
    }
    return arrow::Status::Invalid("not a sluice plan: missing the ", expected, " header");
  }
  ARROW_RETURN_NOT_OK(CheckCborShape(data + magic_len, size - magic_len, max_depth));
  // nlohmann may still throw on some inputs with exceptions off.
  try {
    json doc = json::from_cbor(data + magic_len, data + size, /*strict=*/true,
                               /*allow_exceptions=*/false);
    if (doc.is_discarded()) return arrow::Status::Invalid("plan: body is not valid CBOR");
    return doc;
  } catch (const std::exception& e) {
    return arrow::Status::Invalid("plan: body is not valid CBOR (", e.what(), ")");
  }
}

arrow::Result<json> SchemaBytes(const std::shared_ptr<arrow::Schema>& schema) {
  if (schema == nullptr) return json(nullptr);
  ARROW_ASSIGN_OR_RAISE(auto buffer, arrow::ipc::SerializeSchema(*schema));
  return json::binary(std::vector<uint8_t>(buffer->data(), buffer->data() + buffer->size()));
}

arrow::Result<std::shared_ptr<arrow::Schema>> SchemaFrom(const json& value) {
  if (value.is_null()) return nullptr;
  if (!value.is_binary()) return arrow::Status::Invalid("plan: schema is not bytes");
  const auto& bytes = value.get_binary();
  auto buffer = std::make_shared<arrow::Buffer>(bytes.data(), static_cast<int64_t>(bytes.size()));
  arrow::io::BufferReader reader(buffer);
  arrow::ipc::DictionaryMemo memo;
  auto schema = arrow::ipc::ReadSchema(&reader, &memo);
  if (!schema.ok()) return arrow::Status::Invalid("plan: bad schema: ", schema.status().message());
  return schema;
}

arrow::Result<const json*> Field(const json& obj, const char* key) {
  if (!obj.is_object()) return arrow::Status::Invalid("plan: expected a map around '", key, "'");
  auto it = obj.find(key);
  if (it == obj.end()) return arrow::Status::Invalid("plan: missing field '", key, "'");
  return &*it;
}

arrow::Result<std::string> Text(const json& obj, const char* key) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Field(obj, key));
  if (!v->is_string()) return arrow::Status::Invalid("plan: field '", key, "' is not text");
  return v->get<std::string>();
}

arrow::Result<int64_t> Int(const json& obj, const char* key) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Field(obj, key));
  if (!v->is_number_integer()) {
    return arrow::Status::Invalid("plan: field '", key, "' is not an integer");
  }
  return v->get<int64_t>();
}

arrow::Result<bool> Bool(const json& obj, const char* key) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Field(obj, key));
  if (!v->is_boolean()) return arrow::Status::Invalid("plan: field '", key, "' is not boolean");
  return v->get<bool>();
}

arrow::Result<std::vector<std::string>> TextList(const json& obj, const char* key) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Field(obj, key));
  if (!v->is_array()) return arrow::Status::Invalid("plan: field '", key, "' is not a list");
  std::vector<std::string> out;
  for (const auto& item : *v) {
    if (!item.is_string()) return arrow::Status::Invalid("plan: '", key, "' holds a non-text item");
    out.push_back(item.get<std::string>());
  }
  return out;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> Bytes(const json& obj, const char* key) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Field(obj, key));
  if (!v->is_binary()) return arrow::Status::Invalid("plan: field '", key, "' is not bytes");
  const auto& bytes = v->get_binary();
  return arrow::Buffer::FromVector(std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

}  // namespace sluice::plan
