#include "exec/key_bytes.h"

namespace sluice::exec {

arrow::Status ForEachKey(const arrow::Array& key,
                         const std::function<void(int64_t, const uint8_t*, size_t)>& fn) {
  auto each = [&](auto&& value_of) {
    for (int64_t i = 0; i < key.length(); ++i) {
      if (key.IsNull(i)) {
        fn(i, nullptr, 0);
      } else {
        value_of(i);
      }
    }
  };
  switch (key.type_id()) {
    case arrow::Type::FIXED_SIZE_BINARY: {
      const auto& a = static_cast<const arrow::FixedSizeBinaryArray&>(key);
      each([&](int64_t i) { fn(i, a.GetValue(i), static_cast<size_t>(a.byte_width())); });
      return arrow::Status::OK();
    }
    case arrow::Type::BINARY:
    case arrow::Type::STRING: {
      const auto& a = static_cast<const arrow::BinaryArray&>(key);
      each([&](int64_t i) {
        auto v = a.GetView(i);
        fn(i, reinterpret_cast<const uint8_t*>(v.data()), v.size());
      });
      return arrow::Status::OK();
    }
    case arrow::Type::INT64: {
      const auto& a = static_cast<const arrow::Int64Array&>(key);
      each([&](int64_t i) {
        const int64_t v = a.Value(i);
        fn(i, reinterpret_cast<const uint8_t*>(&v), sizeof(v));
      });
      return arrow::Status::OK();
    }
    case arrow::Type::INT32: {
      const auto& a = static_cast<const arrow::Int32Array&>(key);
      each([&](int64_t i) {
        const int64_t v = a.Value(i);
        fn(i, reinterpret_cast<const uint8_t*>(&v), sizeof(v));
      });
      return arrow::Status::OK();
    }
    default:
      return arrow::Status::TypeError("key column of type ", key.type()->ToString(),
                                      " is not supported; use a string, binary or integer column");
  }
}

}  // namespace sluice::exec
