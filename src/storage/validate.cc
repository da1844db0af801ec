#include "storage/validate.h"

#include <arrow/array.h>
#include <arrow/extension_type.h>
#include <arrow/type.h>
#include <arrow/util/bit_util.h>

#include <simdjson.h>
#include <cstring>

namespace sluice::storage {

namespace {

inline bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Whether every non-null value of a string array (the values over its own offset and length, as
// Arrow's validation reads them) is valid UTF-8: the bytes they span are, and each non-empty
// value starts and ends on a character boundary. False may also mean "cannot tell this way".
template <typename Offset>
bool StringValuesValid(const arrow::ArrayData& data) {
  if (data.length == 0) return true;
  if (data.buffers.size() < 3 || data.buffers[1] == nullptr) return false;
  const Offset* offsets = data.GetValues<Offset>(1);
  const uint8_t* bytes = data.buffers[2] == nullptr ? nullptr : data.buffers[2]->data();
  const Offset begin = offsets[0];
  const Offset end = offsets[data.length];
  if (end == begin) return true;
  if (bytes == nullptr || !IsValidUtf8(bytes + begin, static_cast<int64_t>(end - begin))) {
    return false;
  }
  const uint8_t* validity =
      data.buffers[0] == nullptr || data.null_count == 0 ? nullptr : data.buffers[0]->data();
  for (int64_t i = 0; i < data.length; ++i) {
    const Offset start = offsets[i];
    const Offset stop = offsets[i + 1];
    if (start == stop) continue;
    if (validity != nullptr && !arrow::bit_util::GetBit(validity, data.offset + i)) continue;
    if (IsContinuation(bytes[start]) || (stop < end && IsContinuation(bytes[stop]))) {
      return false;
    }
  }
  return true;
}

bool HasText(const arrow::DataType& type) {
  if (type.id() == arrow::Type::STRING || type.id() == arrow::Type::LARGE_STRING ||
      type.id() == arrow::Type::STRING_VIEW) {
    return true;
  }
  if (type.id() == arrow::Type::DICTIONARY) {
    return HasText(*static_cast<const arrow::DictionaryType&>(type).value_type());
  }
  if (type.id() == arrow::Type::EXTENSION) {
    return HasText(*static_cast<const arrow::ExtensionType&>(type).storage_type());
  }
  for (const auto& f : type.fields()) {
    if (HasText(*f->type())) return true;
  }
  return false;
}

// `type` with its strings seen as binary (the same layout), or null where this does not look
// into the type (then Arrow validates it).
std::shared_ptr<arrow::DataType> AsBinary(const std::shared_ptr<arrow::DataType>& type) {
  if (!HasText(*type)) return type;
  auto child = [&](int i) -> std::shared_ptr<arrow::Field> {
    auto t = AsBinary(type->field(i)->type());
    return t == nullptr ? nullptr : type->field(i)->WithType(t);
  };
  switch (type->id()) {
    case arrow::Type::STRING:
      return arrow::binary();
    case arrow::Type::LARGE_STRING:
      return arrow::large_binary();
    case arrow::Type::STRUCT: {
      arrow::FieldVector fields;
      for (int i = 0; i < type->num_fields(); ++i) {
        auto f = child(i);
        if (f == nullptr) return nullptr;
        fields.push_back(std::move(f));
      }
      return arrow::struct_(std::move(fields));
    }
    case arrow::Type::LIST: {
      auto f = child(0);
      return f == nullptr ? nullptr : arrow::list(std::move(f));
    }
    case arrow::Type::LARGE_LIST: {
      auto f = child(0);
      return f == nullptr ? nullptr : arrow::large_list(std::move(f));
    }
    case arrow::Type::FIXED_SIZE_LIST: {
      auto f = child(0);
      return f == nullptr ? nullptr
                          : arrow::fixed_size_list(
                                std::move(f),
                                static_cast<const arrow::FixedSizeListType&>(*type).list_size());
    }
    default:
      return nullptr;
  }
}

std::shared_ptr<arrow::ArrayData> WithType(const std::shared_ptr<arrow::ArrayData>& data,
                                           const std::shared_ptr<arrow::DataType>& type) {
  if (data->type == type) return data;
  auto out = std::make_shared<arrow::ArrayData>(*data);
  out->type = type;
  for (size_t i = 0; i < out->child_data.size(); ++i) {
    out->child_data[i] = WithType(out->child_data[i], type->field(static_cast<int>(i))->type());
  }
  return out;
}

// The UTF-8 half of ValidateFull over every string array in `data` (whose structure is valid).
bool TextValid(const arrow::ArrayData& data) {
  switch (data.type->id()) {
    case arrow::Type::STRING:
      return StringValuesValid<int32_t>(data);
    case arrow::Type::LARGE_STRING:
      return StringValuesValid<int64_t>(data);
    default:
      for (const auto& c : data.child_data) {
        if (HasText(*c->type) && !TextValid(*c)) return false;
      }
      return true;
  }
}

bool FastValid(const arrow::RecordBatch& batch) {
  if (batch.num_columns() != batch.schema()->num_fields()) return false;
  for (int i = 0; i < batch.num_columns(); ++i) {
    const std::shared_ptr<arrow::ArrayData>& data = batch.column_data(i);
    if (data->length != batch.num_rows()) return false;
    if (!data->type->Equals(batch.schema()->field(i)->type())) return false;
    auto binary = AsBinary(data->type);
    if (binary == nullptr) return false;
    if (!arrow::MakeArray(WithType(data, binary))->ValidateFull().ok()) return false;
    if (binary != data->type && !TextValid(*data)) return false;
  }
  return true;
}

}  // namespace

bool IsValidUtf8(const uint8_t* data, int64_t size) {
  // simdjson picks the widest kernel this CPU has (AVX-512, AVX2, SSE4.2) at run time.
  return simdjson::validate_utf8(reinterpret_cast<const char*>(data), static_cast<size_t>(size));
}

arrow::Status ValidateFull(const arrow::RecordBatch& batch) {
  if (FastValid(batch)) return arrow::Status::OK();
  return batch.ValidateFull();
}

}  // namespace sluice::storage
