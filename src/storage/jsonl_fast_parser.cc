#include "storage/jsonl_fast_parser.h"

#include <arrow/api.h>
#include <arrow/util/value_parsing.h>

#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

// Strings are scanned 16 bytes at a time (SSE2 is in every x86-64). rapidjson does that only
// for in-memory streams such as the one used here; Arrow's reader gives it a stream type that it
// scans a byte at a time.
#if defined(__x86_64__) && !defined(RAPIDJSON_SSE2)
#define RAPIDJSON_SSE2
#endif
#include <rapidjson/reader.h>

#include "storage/validate.h"

namespace sluice::storage {

namespace {

// The fields of one object that were seen are bits of one word.
constexpr int kMaxFields = 64;

bool FieldsSupported(const arrow::FieldVector& fields);

bool Supported(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::BOOL:
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
    case arrow::Type::UINT32:
    case arrow::Type::UINT64:
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::TIMESTAMP:
      return true;
    case arrow::Type::STRUCT:
    case arrow::Type::LIST:
      return FieldsSupported(type.fields());
    default:
      return false;
  }
}

// At most kMaxFields fields, each of a supported type, no two of one name (a key names one).
bool FieldsSupported(const arrow::FieldVector& fields) {
  if (fields.size() > static_cast<size_t>(kMaxFields)) return false;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!Supported(*fields[i]->type())) return false;
    for (size_t j = 0; j < i; ++j) {
      if (fields[j]->name() == fields[i]->name()) return false;
    }
  }
  return true;
}

// One column (or nested child) of the schema, with the builder its values go to. The root, a
// line's object, has children and no field or builder.
struct Column {
  const arrow::Field* field = nullptr;
  arrow::ArrayBuilder* builder = nullptr;
  arrow::Type::type id = arrow::Type::STRUCT;
  std::vector<Column> children;         // a struct's fields, or a list's item
  std::vector<std::string_view> names;  // a struct's field names, in order
};

Column MakeColumn(const arrow::Field& field, arrow::ArrayBuilder* builder) {
  Column column;
  column.field = &field;
  column.builder = builder;
  const arrow::DataType& type = *field.type();
  column.id = type.id();
  if (type.id() == arrow::Type::STRUCT) {
    auto* b = static_cast<arrow::StructBuilder*>(builder);
    for (int i = 0; i < type.num_fields(); ++i) {
      column.children.push_back(MakeColumn(*type.field(i), b->child_builder(i).get()));
      column.names.push_back(type.field(i)->name());
    }
  } else if (type.id() == arrow::Type::LIST) {
    auto* b = static_cast<arrow::ListBuilder*>(builder);
    column.children.push_back(MakeColumn(*type.field(0), b->value_builder()));
  }
  return column;
}

// A null for `column`. Under a null struct Arrow's reader leaves nulls in every child, where
// StructBuilder::AppendNull would append empty values.
bool AppendNull(const Column& column) {
  if (column.id != arrow::Type::STRUCT) return column.builder->AppendNull().ok();
  if (!static_cast<arrow::StructBuilder*>(column.builder)->Append(false).ok()) return false;
  for (const Column& child : column.children) {
    if (!AppendNull(child)) return false;
  }
  return true;
}

// A number's text parsed as Arrow's reader parses it (it, too, takes numbers as text).
template <typename T>
bool AppendNumber(const Column& column, const char* text, size_t length) {
  typename T::c_type value;
  const auto& type = static_cast<const T&>(*column.field->type());
  if (!arrow::internal::ParseValue<T>(type, text, length, &value)) return false;
  return static_cast<typename arrow::TypeTraits<T>::BuilderType*>(column.builder)
      ->Append(value)
      .ok();
}

// rapidjson's SAX events for one line, appended to the builders as they come. A handler
// returning false stops the parse, and the fast path declines.
class Handler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
 public:
  explicit Handler(const Column* root) : root_(root) {}

  bool Null() {
    const Column* c = Target();
    return c != nullptr && c->field->nullable() && AppendNull(*c);
  }
  bool Bool(bool b) {
    const Column* c = Target();
    return c != nullptr && c->id == arrow::Type::BOOL &&
           static_cast<arrow::BooleanBuilder*>(c->builder)->Append(b).ok();
  }
  bool RawNumber(const char* text, rapidjson::SizeType length, bool) {
    const Column* c = Target();
    if (c == nullptr) return false;
    switch (c->id) {
      case arrow::Type::INT8:
        return AppendNumber<arrow::Int8Type>(*c, text, length);
      case arrow::Type::INT16:
        return AppendNumber<arrow::Int16Type>(*c, text, length);
      case arrow::Type::INT32:
        return AppendNumber<arrow::Int32Type>(*c, text, length);
      case arrow::Type::INT64:
        return AppendNumber<arrow::Int64Type>(*c, text, length);
      case arrow::Type::UINT8:
        return AppendNumber<arrow::UInt8Type>(*c, text, length);
      case arrow::Type::UINT16:
        return AppendNumber<arrow::UInt16Type>(*c, text, length);
      case arrow::Type::UINT32:
        return AppendNumber<arrow::UInt32Type>(*c, text, length);
      case arrow::Type::UINT64:
        return AppendNumber<arrow::UInt64Type>(*c, text, length);
      case arrow::Type::FLOAT:
        return AppendNumber<arrow::FloatType>(*c, text, length);
      case arrow::Type::DOUBLE:
        return AppendNumber<arrow::DoubleType>(*c, text, length);
      default:
        return false;
    }
  }
  bool String(const char* text, rapidjson::SizeType length, bool) {
    const Column* c = Target();
    if (c == nullptr) return false;
    switch (c->id) {
      case arrow::Type::STRING:
        return static_cast<arrow::StringBuilder*>(c->builder)->Append(text, length).ok();
      case arrow::Type::LARGE_STRING:
        return static_cast<arrow::LargeStringBuilder*>(c->builder)->Append(text, length).ok();
      case arrow::Type::TIMESTAMP:
        // As Arrow's reader: an ISO 8601 string, parsed by Arrow's own parser.
        return AppendNumber<arrow::TimestampType>(*c, text, length);
      default:
        return false;
    }
  }
  bool StartObject() {
    const Column* c = stack_.empty() ? root_ : Target();
    if (c == nullptr || c->id != arrow::Type::STRUCT) return false;
    if (c != root_ && !static_cast<arrow::StructBuilder*>(c->builder)->Append().ok()) {
      return false;
    }
    stack_.push_back({c, /*list=*/false});
    return true;
  }
  bool Key(const char* text, rapidjson::SizeType length, bool) {
    Frame& f = stack_.back();
    const std::string_view key(text, length);
    size_t i = 0;
    while (i < f.column->names.size() && f.column->names[i] != key) ++i;
    // An unknown field is an error, and a repeated one Arrow's reader may not take alike.
    if (i == f.column->names.size() || (f.seen >> i & 1) != 0) return false;
    f.seen |= uint64_t{1} << i;
    f.pending = &f.column->children[i];
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    const Frame f = stack_.back();
    stack_.pop_back();
    for (size_t i = 0; i < f.column->children.size(); ++i) {
      if ((f.seen >> i & 1) != 0) continue;
      const Column& child = f.column->children[i];
      if (!child.field->nullable() || !AppendNull(child)) return false;
    }
    return true;
  }
  bool StartArray() {
    const Column* c = Target();
    if (c == nullptr || c->id != arrow::Type::LIST ||
        !static_cast<arrow::ListBuilder*>(c->builder)->Append().ok()) {
      return false;
    }
    stack_.push_back({c, /*list=*/true});
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    stack_.pop_back();
    return true;
  }

 private:
  struct Frame {
    const Column* column;
    bool list;
    uint64_t seen = 0;
    const Column* pending = nullptr;  // an object's column for the key just read
  };

  // The column the next value goes to: a list's item, or the field whose key came last (once).
  // Null for a value outside the line's object.
  const Column* Target() {
    if (stack_.empty()) return nullptr;
    Frame& f = stack_.back();
    if (f.list) return &f.column->children[0];
    const Column* c = f.pending;
    f.pending = nullptr;
    return c;
  }

  const Column* root_;
  std::vector<Frame> stack_;
};

// Whether every string under `data` is valid UTF-8. Checked on the unescaped strings rather than
// the text: rapidjson writes a lone escaped surrogate ("\udc00") as its 3-byte form, which is not
// UTF-8, where Arrow's reader fails. The text's own bytes all lie in strings (rapidjson takes
// ASCII alone outside them) and each escape adds whole characters, so the strings' bytes, one
// after another, are valid where each string is.
bool StringsValid(const arrow::ArrayData& data) {
  if (data.type->id() == arrow::Type::STRING || data.type->id() == arrow::Type::LARGE_STRING) {
    const bool large = data.type->id() == arrow::Type::LARGE_STRING;
    const int64_t begin = large ? data.GetValues<int64_t>(1)[0] : data.GetValues<int32_t>(1)[0];
    const int64_t end =
        large ? data.GetValues<int64_t>(1)[data.length] : data.GetValues<int32_t>(1)[data.length];
    const uint8_t* bytes = data.buffers[2] != nullptr ? data.buffers[2]->data() : nullptr;
    return end == begin || IsValidUtf8(bytes + begin, end - begin);
  }
  for (const auto& child : data.child_data) {
    if (!StringsValid(*child)) return false;
  }
  return true;
}

}  // namespace

bool JsonlFastPathSupports(const arrow::Schema& schema) { return FieldsSupported(schema.fields()); }

std::shared_ptr<arrow::RecordBatch> TryParseJsonlFast(
    const arrow::Buffer& bytes, const std::shared_ptr<arrow::Schema>& schema) {
  if (!JsonlFastPathSupports(*schema)) return nullptr;
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()),
                              static_cast<size_t>(bytes.size()));
  std::vector<std::unique_ptr<arrow::ArrayBuilder>> builders;
  Column root;
  for (const auto& f : schema->fields()) {
    auto builder = arrow::MakeBuilder(f->type());
    if (!builder.ok()) return nullptr;
    builders.push_back(*std::move(builder));
    root.children.push_back(MakeColumn(*f, builders.back().get()));
    root.names.push_back(f->name());
  }
  // Parsed in place (strings are unescaped where they lie) in a copy whose every line ends in a
  // NUL, where rapidjson's stream ends. Its SSE2 scan reads whole aligned 16-byte blocks, up to
  // 15 bytes past the last NUL: they are allocated, and zero.
  constexpr size_t kTail = 16;
  std::unique_ptr<char[]> copy(new char[text.size() + 1 + kTail]);
  std::memcpy(copy.get(), text.data(), text.size());
  std::memset(copy.get() + text.size(), 0, 1 + kTail);
  rapidjson::Reader reader;
  constexpr unsigned kFlags = rapidjson::kParseInsituFlag | rapidjson::kParseNumbersAsStringsFlag;
  Handler handler(&root);
  int64_t rows = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    char* in_place = copy.get() + start;
    copy[end] = '\0';
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank
    rapidjson::InsituStringStream stream(in_place);
    if (reader.Parse<kFlags>(stream, handler).IsError()) return nullptr;
    // The stream stops at the first NUL: one inside the line is not JSON's.
    if (stream.Tell() != line.size()) return nullptr;
    ++rows;
  }
  arrow::ArrayVector arrays;
  for (auto& b : builders) {
    std::shared_ptr<arrow::Array> array;
    if (!b->Finish(&array).ok() || !StringsValid(*array->data())) return nullptr;
    arrays.push_back(std::move(array));
  }
  return arrow::RecordBatch::Make(schema, rows, std::move(arrays));
}

}  // namespace sluice::storage
