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

arrow::Status CheckCborShape(const uint8_t* data, size_t size, int max_depth) {
  auto invalid = [](auto&&... why) {
    return arrow::Status::Invalid("plan: body is not valid CBOR (", why..., ")");
  };
  // Items still expected by each open array or map (a map's pairs count twice); -1 for an
  // indefinite-length container, which a break byte closes. Never deeper than max_depth.
  std::vector<int64_t> open;
  size_t pos = 0;
  for (;;) {
    if (pos >= size) return invalid("truncated at byte ", pos);
    const size_t start = pos;
    const uint8_t initial = data[pos++];
    const int major = initial >> 5;
    const int info = initial & 0x1f;
    bool complete = true;  // whether this header finishes an item
    if (initial == 0xff) {
      if (open.empty() || open.back() != -1) return invalid("a stray break at byte ", start);
      open.pop_back();  // the indefinite container is complete
    } else {
      uint64_t arg = static_cast<uint64_t>(info);
      if (info >= 24 && info <= 27) {
        const size_t width = size_t{1} << (info - 24);
        if (size - pos < width) return invalid("truncated at byte ", pos);
        arg = 0;
        for (size_t i = 0; i < width; ++i) arg = (arg << 8) | data[pos++];
      } else if (info >= 28 && info <= 30) {
        return invalid("a reserved header at byte ", start);
      }
      const bool indefinite = info == 31;
      if (indefinite && (major == 0 || major == 1 || major == 6)) {
        return invalid("an indefinite length on a number or tag at byte ", start);
      }
      const uint64_t remaining = size - pos;
      const bool container = major == 4 || major == 5 || (indefinite && major <= 3);
      if (container && open.size() >= static_cast<size_t>(max_depth)) {
        return arrow::Status::Invalid("plan: nested deeper than ", max_depth, " levels (at byte ",
                                      start, ")");
      }
      switch (major) {
        case 2:
        case 3:  // byte or text string
          if (indefinite) {
            open.push_back(-1);
            complete = false;
          } else if (arg > remaining) {
            return invalid("a string at byte ", start, " declares ", arg, " bytes, but ", remaining,
                           " remain");
          } else {
            pos += static_cast<size_t>(arg);
          }
          break;
        case 4:
        case 5:  // array or map: every item takes at least one byte
          if (indefinite) {
            open.push_back(-1);
            complete = false;
          } else if (arg > remaining || (major == 5 && 2 * arg > remaining)) {
            return invalid(major == 4 ? "an array" : "a map", " at byte ", start, " declares ", arg,
                           major == 4 ? " items" : " pairs", ", but ", remaining, " bytes remain");
          } else if (arg > 0) {
            open.push_back(static_cast<int64_t>(major == 5 ? 2 * arg : arg));
            complete = false;
          }
          break;
        case 6:  // a tag qualifies the item after it
          complete = false;
          break;
        default:  // integers, simple values and floats: the argument was the whole payload
          break;
      }
    }
    if (!complete) continue;
    // The item is done: count it against its container, which may complete in turn.
    while (!open.empty() && open.back() > 0 && --open.back() == 0) open.pop_back();
    if (open.empty()) return arrow::Status::OK();  // trailing bytes are left to the decoder
  }
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
