#include "exec/window_order.h"

#include <arrow/api.h>
#include <arrow/compute/exec.h>
#include <arrow/compute/row/grouper.h>

#include <bit>
#include <cstring>
#include <limits>

#include "exec/canonical_floats.h"

namespace sluice::exec {

namespace {

namespace cp = arrow::compute;

template <typename T>
void SignedOrdinals(const arrow::ArrayData& d, std::vector<uint64_t>* out) {
  const T* v = d.GetValues<T>(1);
  for (int64_t i = 0; i < d.length; ++i) {
    (*out)[static_cast<size_t>(i)] =
        static_cast<uint64_t>(static_cast<int64_t>(v[i])) ^ (uint64_t{1} << 63);
  }
}

template <typename T>
void UnsignedOrdinals(const arrow::ArrayData& d, std::vector<uint64_t>* out) {
  const T* v = d.GetValues<T>(1);
  for (int64_t i = 0; i < d.length; ++i) (*out)[static_cast<size_t>(i)] = v[i];
}

// IEEE order as unsigned order: negatives flipped whole, positives above them. -0 is 0 (SQL
// and Arrow's sort take them as equal); NaN has no place here.
template <typename T, typename Bits>
bool FloatOrdinals(const arrow::ArrayData& d, std::vector<uint64_t>* out) {
  const T* v = d.GetValues<T>(1);
  constexpr Bits kSign = Bits{1} << (sizeof(Bits) * 8 - 1);
  for (int64_t i = 0; i < d.length; ++i) {
    T x = v[i];
    if (x != x) {
      if (d.buffers[0] == nullptr || arrow::bit_util::GetBit(d.buffers[0]->data(), d.offset + i)) {
        return false;
      }
      x = 0;  // a NULL slot's bytes
    }
    if (x == 0) x = 0;
    Bits b;
    std::memcpy(&b, &x, sizeof(b));
    (*out)[static_cast<size_t>(i)] = (b & kSign) ? ~b & ~Bits{0} : b | kSign;
  }
  return true;
}

// A key's code per row and how many bits the codes take.
struct KeyCodes {
  std::vector<uint64_t> codes;
  int bits = 0;
};

std::optional<KeyCodes> OrderCodes(const arrow::Array& a, const cp::SortKey& key) {
  auto ordinals = OrderOrdinals(a);
  if (!ordinals) return std::nullopt;
  const int64_t n = a.length();
  const bool has_null = a.null_count() > 0;
  uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (has_null && a.IsNull(i)) continue;
    lo = std::min(lo, (*ordinals)[static_cast<size_t>(i)]);
    hi = std::max(hi, (*ordinals)[static_cast<size_t>(i)]);
  }
  KeyCodes k;
  k.codes = std::move(*ordinals);
  if (lo > hi) {  // every row NULL: all peers
    std::fill(k.codes.begin(), k.codes.end(), 0);
    return k;
  }
  const uint64_t range = hi - lo;
  if (has_null && range == std::numeric_limits<uint64_t>::max()) return std::nullopt;
  const bool descending = key.order == cp::SortOrder::Descending;
  const bool nulls_first = key.null_placement == cp::NullPlacement::AtStart;
  const uint64_t shift = has_null && nulls_first ? 1 : 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t& c = k.codes[static_cast<size_t>(i)];
    if (has_null && a.IsNull(i)) {
      c = nulls_first ? 0 : range + 1;
    } else {
      c = (descending ? hi - c : c - lo) + shift;
    }
  }
  const uint64_t max_code = range + (has_null ? 1 : 0);
  k.bits = max_code == 0 ? 0 : 64 - std::countl_zero(max_code);
  return k;
}

// Dense group ids of the partition keys' values (NULL one value), in order of first sight.
arrow::Result<std::optional<std::vector<uint32_t>>> GroupIds(const arrow::RecordBatch& batch,
                                                             const std::vector<std::string>& keys,
                                                             uint32_t* groups) {
  std::vector<arrow::TypeHolder> types;
  std::vector<arrow::Datum> columns;
  for (const auto& k : keys) {
    auto column = batch.GetColumnByName(k);
    if (column == nullptr) return arrow::Status::Invalid("internal: window key ", k, " missing");
    // The grouper hashes bits: -0.0 and 0.0, and NaNs, must be one partition each.
    if (IsFloatKey(*column->type())) {
      ARROW_ASSIGN_OR_RAISE(column,
                            CanonicalFloatArray(std::move(column), arrow::default_memory_pool()));
    }
    types.emplace_back(column->type());
    columns.emplace_back(column);
  }
  auto grouper = cp::Grouper::Make(types);
  if (!grouper.ok()) return std::nullopt;  // a type Arrow's grouper does not hash
  const cp::ExecBatch exec_batch(std::move(columns), batch.num_rows());
  const cp::ExecSpan span(exec_batch);
  std::vector<uint32_t> ids(static_cast<size_t>(batch.num_rows()));
  constexpr int64_t kStep = int64_t{1} << 15;
  for (int64_t offset = 0; offset < batch.num_rows(); offset += kStep) {
    const int64_t length = std::min(kStep, batch.num_rows() - offset);
    ARROW_ASSIGN_OR_RAISE(arrow::Datum part, (*grouper)->Consume(span, offset, length));
    const auto& array = *part.array();
    std::memcpy(ids.data() + offset, array.GetValues<uint32_t>(1),
                static_cast<size_t>(length) * sizeof(uint32_t));
  }
  *groups = (*grouper)->num_groups();
  return ids;
}

// Stable LSD radix sort of (key, row) by the key's low `bits` bits, a byte at a time; a byte all
// keys share costs one counting pass and no move.
void RadixSort(int bits, std::vector<uint64_t>* keys, std::vector<uint32_t>* rows) {
  const size_t n = keys->size();
  std::vector<uint64_t> key_tmp(n);
  std::vector<uint32_t> row_tmp(n);
  for (int shift = 0; shift < bits; shift += 8) {
    size_t count[257] = {};
    for (const uint64_t k : *keys) ++count[((k >> shift) & 0xff) + 1];
    bool one_bucket = false;
    for (int b = 1; b <= 256; ++b) one_bucket |= count[b] == n;
    if (one_bucket) continue;
    for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
    for (size_t i = 0; i < n; ++i) {
      const size_t at = count[((*keys)[i] >> shift) & 0xff]++;
      key_tmp[at] = (*keys)[i];
      row_tmp[at] = (*rows)[i];
    }
    keys->swap(key_tmp);
    rows->swap(row_tmp);
  }
}

// The codes replaced by their dense ranks (equal codes one rank), where the values spread
// wider than there are distinct ones: a double's codes take some 60 bits, its ranks few.
void DenseRanks(KeyCodes* k) {
  const size_t n = k->codes.size();
  std::vector<uint64_t> sorted = k->codes;
  std::vector<uint32_t> rows(n);
  for (size_t i = 0; i < n; ++i) rows[i] = static_cast<uint32_t>(i);
  RadixSort(k->bits, &sorted, &rows);
  uint64_t rank = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && sorted[i] != sorted[i - 1]) ++rank;
    k->codes[rows[i]] = rank;
  }
  k->bits = rank == 0 ? 0 : 64 - std::countl_zero(rank);
}

}  // namespace

std::optional<std::vector<uint64_t>> OrderOrdinals(const arrow::Array& a) {
  const arrow::ArrayData& d = *a.data();
  std::vector<uint64_t> out(static_cast<size_t>(a.length()));
  switch (a.type_id()) {
    case arrow::Type::INT8:
      SignedOrdinals<int8_t>(d, &out);
      break;
    case arrow::Type::INT16:
      SignedOrdinals<int16_t>(d, &out);
      break;
    case arrow::Type::INT32:
    case arrow::Type::DATE32:
    case arrow::Type::TIME32:
      SignedOrdinals<int32_t>(d, &out);
      break;
    case arrow::Type::INT64:
    case arrow::Type::DATE64:
    case arrow::Type::TIME64:
    case arrow::Type::TIMESTAMP:
    case arrow::Type::DURATION:
      SignedOrdinals<int64_t>(d, &out);
      break;
    case arrow::Type::UINT8:
      UnsignedOrdinals<uint8_t>(d, &out);
      break;
    case arrow::Type::UINT16:
      UnsignedOrdinals<uint16_t>(d, &out);
      break;
    case arrow::Type::UINT32:
      UnsignedOrdinals<uint32_t>(d, &out);
      break;
    case arrow::Type::UINT64:
      UnsignedOrdinals<uint64_t>(d, &out);
      break;
    case arrow::Type::BOOL:
      for (int64_t i = 0; i < a.length(); ++i) {
        out[static_cast<size_t>(i)] = arrow::bit_util::GetBit(d.buffers[1]->data(), d.offset + i);
      }
      break;
    case arrow::Type::FLOAT:
      if (!FloatOrdinals<float, uint32_t>(d, &out)) return std::nullopt;
      break;
    case arrow::Type::DOUBLE:
      if (!FloatOrdinals<double, uint64_t>(d, &out)) return std::nullopt;
      break;
    case arrow::Type::DECIMAL128: {
      // Little-endian 128-bit values; only those that are 64-bit integers fit an ordinal.
      const uint8_t* v = d.buffers[1]->data() + d.offset * 16;
      for (int64_t i = 0; i < a.length(); ++i) {
        int64_t low, high;
        std::memcpy(&low, v + i * 16, 8);
        std::memcpy(&high, v + i * 16 + 8, 8);
        if (high != (low >> 63)) {
          if (a.IsValid(i)) return std::nullopt;
          low = 0;
        }
        out[static_cast<size_t>(i)] = static_cast<uint64_t>(low) ^ (uint64_t{1} << 63);
      }
      break;
    }
    default:
      return std::nullopt;
  }
  return out;
}

WindowLayout LayoutFromMarks(const std::vector<uint8_t>& new_part,
                             const std::vector<uint8_t>& new_peer) {
  const size_t n = new_part.size();
  WindowLayout l;
  l.part_begin.resize(n);
  l.part_end.resize(n);
  l.peer_begin.resize(n);
  l.peer_end.resize(n);
  for (size_t i = 0; i < n; ++i) {
    l.part_begin[i] = new_part[i] ? static_cast<int64_t>(i) : l.part_begin[i - 1];
    l.peer_begin[i] = new_peer[i] ? static_cast<int64_t>(i) : l.peer_begin[i - 1];
  }
  for (size_t j = n; j-- > 0;) {
    const bool last = j + 1 == n;
    l.part_end[j] = last || new_part[j + 1] ? static_cast<int64_t>(j + 1) : l.part_end[j + 1];
    l.peer_end[j] = last || new_peer[j + 1] ? static_cast<int64_t>(j + 1) : l.peer_end[j + 1];
  }
  return l;
}

arrow::Result<std::optional<WindowOrder>> OrderByCodes(
    const arrow::RecordBatch& batch, const std::vector<std::string>& partition_keys,
    const std::vector<cp::SortKey>& order_keys) {
  const int64_t n = batch.num_rows();
  if (n >= int64_t{1} << 32) return std::nullopt;
  std::vector<KeyCodes> codes;
  for (const auto& k : order_keys) {
    const auto column =
        k.target.name() != nullptr ? batch.GetColumnByName(*k.target.name()) : nullptr;
    if (column == nullptr) return std::nullopt;
    auto c = OrderCodes(*column, k);
    if (!c) return std::nullopt;
    codes.push_back(std::move(*c));
  }
  std::vector<uint64_t> keys(static_cast<size_t>(n), 0);
  int group_bits = 0;
  if (!partition_keys.empty()) {
    uint32_t groups = 0;
    ARROW_ASSIGN_OR_RAISE(auto ids, GroupIds(batch, partition_keys, &groups));
    if (!ids) return std::nullopt;
    group_bits = groups <= 1 ? 0 : 32 - std::countl_zero(groups - 1);
    for (int64_t i = 0; i < n; ++i) keys[static_cast<size_t>(i)] = (*ids)[static_cast<size_t>(i)];
  }
  auto order_bits_of = [&] {
    int bits = 0;
    for (const auto& c : codes) bits += c.bits;
    return bits;
  };
  if (group_bits + order_bits_of() > 64) {
    // Ranks are at most 32 bits wide (rows are fewer than 2^32).
    for (auto& c : codes) {
      if (c.bits > 32) DenseRanks(&c);
    }
  }
  const int order_bits = order_bits_of();
  if (group_bits + order_bits > 64) return std::nullopt;
  for (const auto& c : codes) {
    if (c.bits == 0) continue;
    for (int64_t i = 0; i < n; ++i) {
      auto& k = keys[static_cast<size_t>(i)];
      // A shift by 64 is undefined; a 64-bit key is then the only one, and k still 0.
      k = c.bits >= 64 ? c.codes[static_cast<size_t>(i)]
                       : (k << c.bits) | c.codes[static_cast<size_t>(i)];
    }
  }
  std::vector<uint32_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = static_cast<uint32_t>(i);
  RadixSort(group_bits + order_bits, &keys, &rows);

  std::vector<uint8_t> new_part(static_cast<size_t>(n), 0), new_peer(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    const bool first = i == 0;
    new_peer[i] = first || keys[i] != keys[i - 1];
    // The partition is the key's high bits (none where there is no PARTITION BY).
    new_part[i] =
        first || (order_bits < 64 && (keys[i] >> order_bits) != (keys[i - 1] >> order_bits));
  }
  WindowOrder out;
  out.layout = LayoutFromMarks(new_part, new_peer);
  arrow::UInt64Builder b;
  ARROW_RETURN_NOT_OK(b.Reserve(n));
  for (const uint32_t r : rows) b.UnsafeAppend(r);
  std::shared_ptr<arrow::Array> indices;
  ARROW_RETURN_NOT_OK(b.Finish(&indices));
  out.indices = std::static_pointer_cast<arrow::UInt64Array>(indices);
  return out;
}

}  // namespace sluice::exec
