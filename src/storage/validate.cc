#include "storage/validate.h"

#include <arrow/array.h>
#include <arrow/extension_type.h>
#include <arrow/type.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/utf8.h>

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define SLUICE_UTF8_AVX2 1
#endif

namespace sluice::storage {

namespace {

bool ArrowIsValidUtf8(const uint8_t* data, int64_t size) {
  // Arrow's validator reads tables that are built once, before its first use.
  static const bool ready = (arrow::util::InitializeUTF8(), true);
  (void)ready;
  return arrow::util::ValidateUTF8(data, size);
}

#ifdef SLUICE_UTF8_AVX2

// Keiser and Lemire's lookup algorithm (as in simdjson): each byte is classified by its high
// nibble, the previous byte's high and low nibbles; the three table lookups ANDed together leave
// a bit set exactly where a two-byte pattern is an error. Three- and four-byte sequences are then
// checked by where continuation bytes must be (two and three bytes after a lead byte).
#define SLUICE_AVX2 __attribute__((target("avx2")))

constexpr uint8_t kTooShort = 1 << 0;   // a lead byte or ASCII followed by a lead byte or ASCII
constexpr uint8_t kTooLong = 1 << 1;    // ASCII followed by a continuation byte
constexpr uint8_t kOverlong3 = 1 << 2;  // E0 followed by 80..9F
constexpr uint8_t kTooLarge = 1 << 3;   // F4 followed by 90..BF, or F5..FF
constexpr uint8_t kSurrogate = 1 << 4;  // ED followed by A0..BF
constexpr uint8_t kOverlong2 = 1 << 5;  // C0 or C1
constexpr uint8_t kTooLarge1000 = 1 << 6;
constexpr uint8_t kOverlong4 = 1 << 6;  // F0 followed by 80..8F
constexpr uint8_t kTwoConts = 1 << 7;   // two continuation bytes in a row (fine in 3-4 bytes)
constexpr uint8_t kCarry = kTooShort | kTooLong | kTwoConts;

SLUICE_AVX2 inline __m256i Table16(uint8_t t0, uint8_t t1, uint8_t t2, uint8_t t3, uint8_t t4,
                                   uint8_t t5, uint8_t t6, uint8_t t7, uint8_t t8, uint8_t t9,
                                   uint8_t t10, uint8_t t11, uint8_t t12, uint8_t t13, uint8_t t14,
                                   uint8_t t15) {
  const uint8_t table[16] = {t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15};
  // The same 16 bytes in both lanes: the shuffle looks up within each lane.
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
}

// The high nibble of each byte.
SLUICE_AVX2 inline __m256i High(__m256i v) {
  return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
}

// Each byte of `input` replaced by the byte N places before it (from `prev` at the start).
template <int N>
SLUICE_AVX2 inline __m256i Prev(__m256i input, __m256i prev) {
  return _mm256_alignr_epi8(input, _mm256_permute2x128_si256(prev, input, 0x21), 16 - N);
}

class Avx2Utf8Checker {
 public:
  SLUICE_AVX2 Avx2Utf8Checker()
      : error_(_mm256_setzero_si256()),
        prev_block_(_mm256_setzero_si256()),
        prev_incomplete_(_mm256_setzero_si256()),
        byte_1_high_(Table16(kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong,
                             kTooLong, kTwoConts, kTwoConts, kTwoConts, kTwoConts,
                             kTooShort | kOverlong2, kTooShort, kTooShort | kOverlong3 | kSurrogate,
                             kTooShort | kTooLarge | kTooLarge1000 | kOverlong4)),
        byte_1_low_(Table16(
            kCarry | kOverlong3 | kOverlong2 | kOverlong4, kCarry | kOverlong2, kCarry, kCarry,
            kCarry | kTooLarge, kCarry | kTooLarge | kTooLarge1000,
            kCarry | kTooLarge | kTooLarge1000, kCarry | kTooLarge | kTooLarge1000,
            kCarry | kTooLarge | kTooLarge1000, kCarry | kTooLarge | kTooLarge1000,
            kCarry | kTooLarge | kTooLarge1000, kCarry | kTooLarge | kTooLarge1000,
            kCarry | kTooLarge | kTooLarge1000, kCarry | kTooLarge | kTooLarge1000 | kSurrogate,
            kCarry | kTooLarge | kTooLarge1000, kCarry | kTooLarge | kTooLarge1000)),
        byte_2_high_(Table16(
            kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort,
            kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge1000 | kOverlong4,
            kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge,
            kTooLong | kOverlong2 | kTwoConts | kSurrogate | kTooLarge,
            kTooLong | kOverlong2 | kTwoConts | kSurrogate | kTooLarge, kTooShort, kTooShort,
            kTooShort, kTooShort)),
        // A block whose last three bytes start a sequence longer than what is left of it:
        // ... 1111____ 111_____ 11______ at its very end.
        incomplete_max_(_mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         static_cast<char>(0xF0 - 1), static_cast<char>(0xE0 - 1),
                                         static_cast<char>(0xC0 - 1))) {}

  SLUICE_AVX2 void Next(__m256i input) {
    if (_mm256_movemask_epi8(input) == 0) {
      // ASCII: fine, unless the block before ended inside a sequence.
      error_ = _mm256_or_si256(error_, prev_incomplete_);
      prev_incomplete_ = _mm256_setzero_si256();
    } else {
      const __m256i prev1 = Prev<1>(input, prev_block_);
      const __m256i special = _mm256_and_si256(
          _mm256_and_si256(
              _mm256_shuffle_epi8(byte_1_high_, High(prev1)),
              _mm256_shuffle_epi8(byte_1_low_, _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)))),
          _mm256_shuffle_epi8(byte_2_high_, High(input)));
      const __m256i prev2 = Prev<2>(input, prev_block_);
      const __m256i prev3 = Prev<3>(input, prev_block_);
      // Only 111_____ two bytes back and 1111____ three bytes back stay >= 0x80.
      const __m256i must_continue = _mm256_or_si256(
          _mm256_subs_epu8(prev2, _mm256_set1_epi8(static_cast<char>(0xE0 - 0x80))),
          _mm256_subs_epu8(prev3, _mm256_set1_epi8(static_cast<char>(0xF0 - 0x80))));
      const __m256i must_continue_80 =
          _mm256_and_si256(must_continue, _mm256_set1_epi8(static_cast<char>(0x80)));
      error_ = _mm256_or_si256(error_, _mm256_xor_si256(must_continue_80, special));
      prev_incomplete_ = _mm256_subs_epu8(input, incomplete_max_);
    }
    prev_block_ = input;
  }

  // An error so far; a sequence still open at the end of the last block is not one yet.
  SLUICE_AVX2 bool Failed() const { return _mm256_testz_si256(error_, error_) == 0; }

  // At the end of the text: no error, and no sequence left open.
  SLUICE_AVX2 bool Valid() const {
    const __m256i error = _mm256_or_si256(error_, prev_incomplete_);
    return _mm256_testz_si256(error, error) != 0;
  }

 private:
  __m256i error_;
  __m256i prev_block_;
  __m256i prev_incomplete_;
  const __m256i byte_1_high_;
  const __m256i byte_1_low_;
  const __m256i byte_2_high_;
  const __m256i incomplete_max_;
};

SLUICE_AVX2 bool Avx2IsValidUtf8(const uint8_t* data, int64_t size) {
  Avx2Utf8Checker checker;
  int64_t i = 0;
  for (; i + 32 <= size; i += 32) {
    checker.Next(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i)));
    // An error never goes away: stop at the first, checking only now and then.
    if ((i & 4095) == 4064 && checker.Failed()) return false;
  }
  if (i < size) {
    // The tail, padded with ASCII: a sequence cut off by the end is then too short.
    alignas(32) uint8_t tail[32] = {};
    std::memcpy(tail, data + i, static_cast<size_t>(size - i));
    checker.Next(_mm256_load_si256(reinterpret_cast<const __m256i*>(tail)));
  }
  return checker.Valid();
}

bool HasAvx2() {
  static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx2") != 0);
  return has;
}

#undef SLUICE_AVX2
#endif  // SLUICE_UTF8_AVX2

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
#ifdef SLUICE_UTF8_AVX2
  if (HasAvx2()) return Avx2IsValidUtf8(data, size);
#endif
  return ArrowIsValidUtf8(data, size);
}

arrow::Status ValidateFull(const arrow::RecordBatch& batch) {
  if (FastValid(batch)) return arrow::Status::OK();
  return batch.ValidateFull();
}

}  // namespace sluice::storage
