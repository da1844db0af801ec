#include "exec/row_partition.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "plan/compute_init.h"

namespace sluice::exec {

namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

void Mix(uint64_t* h, const uint8_t* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    *h ^= data[i];
    *h *= kFnvPrime;
  }
}

template <typename T>
void MixValue(uint64_t* h, T v) {
  Mix(h, reinterpret_cast<const uint8_t*>(&v), sizeof(v));
}

// Adds column `a`'s value of every row to that row's running hash.
arrow::Status MixColumn(const arrow::Array& a, std::vector<uint64_t>* hashes) {
  const int64_t n = a.length();
  auto each = [&](auto&& mix_value) {
    for (int64_t i = 0; i < n; ++i) {
      uint64_t* h = &(*hashes)[static_cast<size_t>(i)];
      const uint8_t valid = a.IsValid(i) ? 1 : 0;
      MixValue(h, valid);
      if (valid) mix_value(h, i);
    }
  };
  const arrow::DataType& type = *a.type();
  if (type.id() == arrow::Type::FLOAT || type.id() == arrow::Type::DOUBLE) {
    auto value = [&](int64_t i) -> double {
      return type.id() == arrow::Type::FLOAT
                 ? static_cast<double>(static_cast<const arrow::FloatArray&>(a).Value(i))
                 : static_cast<const arrow::DoubleArray&>(a).Value(i);
    };
    each([&](uint64_t* h, int64_t i) {
      double v = value(i);
      if (v == 0) v = 0;  // -0.0 groups with 0.0
      if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
      MixValue(h, v);
    });
    return arrow::Status::OK();
  }
  if (type.id() == arrow::Type::BOOL) {
    const auto& b = static_cast<const arrow::BooleanArray&>(a);
    each([&](uint64_t* h, int64_t i) { MixValue<uint8_t>(h, b.Value(i) ? 1 : 0); });
    return arrow::Status::OK();
  }
  if (arrow::is_base_binary_like(type.id())) {
    auto view = [&](int64_t i) -> std::string_view {
      if (type.id() == arrow::Type::LARGE_STRING || type.id() == arrow::Type::LARGE_BINARY) {
        return static_cast<const arrow::LargeBinaryArray&>(a).GetView(i);
      }
      return static_cast<const arrow::BinaryArray&>(a).GetView(i);
    };
    each([&](uint64_t* h, int64_t i) {
      const std::string_view v = view(i);
      MixValue<uint64_t>(h, v.size());
      Mix(h, reinterpret_cast<const uint8_t*>(v.data()), v.size());
    });
    return arrow::Status::OK();
  }
  if (type.id() == arrow::Type::NA) {
    // A key that is NULL in every row (SELECT NULL AS k ... GROUP BY k): only validity counts.
    return arrow::Status::OK();
  }
  if (arrow::is_fixed_width(type.id()) && type.id() != arrow::Type::DICTIONARY) {
    // Integers, decimals, dates, times, timestamps, fixed-size binary: the value's bytes.
    const int width = type.byte_width();
    if (width <= 0) {
      return arrow::Status::TypeError("cannot hash-partition on a key of type ", type.ToString());
    }
    const uint8_t* data = a.data()->GetValues<uint8_t>(1, 0);
    const int64_t offset = a.offset();
    each([&](uint64_t* h, int64_t i) {
      Mix(h, data + (offset + i) * width, static_cast<size_t>(width));
    });
    return arrow::Status::OK();
  }
  return arrow::Status::TypeError("cannot hash-partition on a key of type ", type.ToString());
}

}  // namespace

arrow::Result<std::vector<int32_t>> PartitionRowsByKeys(const arrow::RecordBatch& batch,
                                                        const std::vector<std::string>& keys,
                                                        int32_t partitions) {
  if (partitions < 1) return arrow::Status::Invalid("internal: ", partitions, " partitions");
  if (keys.empty()) return std::vector<int32_t>(static_cast<size_t>(batch.num_rows()), 0);
  std::vector<uint64_t> hashes(static_cast<size_t>(batch.num_rows()), kFnvOffset);
  for (const std::string& key : keys) {
    std::shared_ptr<arrow::Array> column = batch.GetColumnByName(key);
    if (column == nullptr) {
      return arrow::Status::Invalid("key column '", key, "' is not in ",
                                    batch.schema()->ToString());
    }
    if (column->type_id() == arrow::Type::DICTIONARY) {
      const auto& dict = static_cast<const arrow::DictionaryType&>(*column->type());
      ARROW_ASSIGN_OR_RAISE(arrow::Datum plain, arrow::compute::Cast(column, dict.value_type()));
      column = plain.make_array();
    }
    ARROW_RETURN_NOT_OK(MixColumn(*column, &hashes));
  }
  std::vector<int32_t> out(hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) {
    out[i] = static_cast<int32_t>(hashes[i] % static_cast<uint64_t>(partitions));
  }
  return out;
}

}  // namespace sluice::exec
