// JSON and CBOR codecs for schema records (record.hpp), derived from each record's Fields().
//
// Both go through nlohmann::json values. They differ only in leaf forms: JSON writes timestamps
// as RFC 3339 text and bytes as hex; CBOR writes timestamps as integer microseconds and bytes as
// byte strings. Decoding is strict: an unknown key, a missing required field, a wrong type or a
// malformed leaf is an Invalid error that names the path, e.g. "$.messages[2].role".
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "sluice/schemas/record.hpp"

namespace sluice::schemas {

enum class Format { kJson, kCbor };

namespace internal {

inline std::string HexOf(const uint8_t* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '\0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

inline bool BytesOfHex(const std::string& hex, std::vector<uint8_t>* out) {
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return false;
  out->resize(hex.size() / 2);
  for (size_t i = 0; i < out->size(); ++i) {
    const int hi = value(hex[2 * i]), lo = value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
constexpr int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

inline void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

}  // namespace internal

/// RFC 3339 text with microseconds and 'Z', e.g. "2026-11-30T07:09:00.000000Z".
inline std::string FormatTimestamp(Timestamp ts) {
  int64_t days = ts.micros / 86400000000LL;
  int64_t rem = ts.micros % 86400000000LL;
  if (rem < 0) {
    rem += 86400000000LL;
    --days;
  }
  int64_t y;
  unsigned m, d;
  internal::CivilFromDays(days, &y, &m, &d);
  const int64_t secs = rem / 1000000;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
                static_cast<long long>(y), m, d, static_cast<long long>(secs / 3600),
                static_cast<long long>(secs / 60 % 60), static_cast<long long>(secs % 60),
                static_cast<long long>(rem % 1000000));
  return buf;
}

/// Parses RFC 3339: "YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+HH:MM|-HH:MM)". Digits past microseconds
/// are truncated.
inline arrow::Result<Timestamp> ParseTimestamp(const std::string& text) {
  auto bad = [&] { return arrow::Status::Invalid("'", text, "' is not an RFC 3339 timestamp"); };
  int y, mo, d, h, mi, s, consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s,
                  &consumed) != 6 ||
      consumed != 19) {
    return bad();
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return bad();
  size_t pos = 19;
  int64_t micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 6) micros = micros * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return bad();
    for (int i = digits; i < 6; ++i) micros *= 10;
  }
  int64_t offset_min = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos + 6 == text.size() && (text[pos] == '+' || text[pos] == '-') &&
             text[pos + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(text.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59) {
      return bad();
    }
    offset_min = (text[pos] == '+' ? 1 : -1) * (oh * 60 + om);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != text.size()) return bad();
  const int64_t days =
      internal::DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  const int64_t secs = days * 86400 + h * 3600 + mi * 60 + s - offset_min * 60;
  return Timestamp{secs * 1000000 + micros};
}

template <typename T>
nlohmann::json Encode(const T& value, Format format);

template <typename T>
arrow::Status Decode(const nlohmann::json& in, const std::string& path, Format format, T* out);

namespace internal {

template <typename T>
nlohmann::json EncodeLeaf(const T& v, Format format) {
  if constexpr (std::is_same_v<T, Timestamp>) {
    return format == Format::kJson ? nlohmann::json(FormatTimestamp(v)) : nlohmann::json(v.micros);
  } else if constexpr (std::is_same_v<T, Digest32>) {
    if (format == Format::kJson) return HexOf(v.data(), v.size());
    return nlohmann::json::binary(std::vector<uint8_t>(v.begin(), v.end()));
  } else if constexpr (std::is_same_v<T, Bytes>) {
    if (format == Format::kJson) return HexOf(v.data.data(), v.data.size());
    return nlohmann::json::binary(v.data);
  } else if constexpr (IsOptional<T>::value) {
    return v.has_value() ? Encode(*v, format) : nlohmann::json(nullptr);
  } else if constexpr (IsVector<T>::value) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& item : v) arr.push_back(Encode(item, format));
    return arr;
  } else if constexpr (RecordType<T>) {
    nlohmann::json obj = nlohmann::json::object();
    ForEachField<T>(
        [&](auto field) { obj[std::string(field.name)] = Encode(v.*(field.member), format); });
    return obj;
  } else {
    static_assert(std::is_same_v<T, bool> || std::is_same_v<T, int32_t> ||
                      std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                      std::is_same_v<T, std::string>,
                  "unsupported schema field type");
    return nlohmann::json(v);
  }
}

inline arrow::Status TypeError(const std::string& path, const char* expected,
                               const nlohmann::json& got) {
  return arrow::Status::Invalid(path, ": expected ", expected, ", got ", got.type_name());
}

template <typename T>
arrow::Status DecodeLeaf(const nlohmann::json& in, const std::string& path, Format format, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!in.is_boolean()) return TypeError(path, "a boolean", in);
    *out = in.get<bool>();
  } else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
    if (!in.is_number_integer()) return TypeError(path, "an integer", in);
    if constexpr (std::is_same_v<T, int32_t>) {
      const int64_t wide = in.get<int64_t>();
      if (wide < INT32_MIN || wide > INT32_MAX) {
        return arrow::Status::Invalid(path, ": ", wide, " does not fit in int32");
      }
    }
    if (in.is_number_unsigned() && in.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return arrow::Status::Invalid(path, ": ", in.dump(), " does not fit in int64");
    }
    *out = static_cast<T>(in.get<int64_t>());
  } else if constexpr (std::is_same_v<T, double>) {
    if (!in.is_number()) return TypeError(path, "a number", in);
    *out = in.get<double>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!in.is_string()) return TypeError(path, "a string", in);
    *out = in.get<std::string>();
  } else if constexpr (std::is_same_v<T, Timestamp>) {
    if (format == Format::kCbor) {
      if (!in.is_number_integer()) return TypeError(path, "integer microseconds", in);
      out->micros = in.get<int64_t>();
    } else {
      if (!in.is_string()) return TypeError(path, "an RFC 3339 timestamp string", in);
      auto ts = ParseTimestamp(in.get<std::string>());
      if (!ts.ok()) return arrow::Status::Invalid(path, ": ", ts.status().message());
      *out = *ts;
    }
  } else if constexpr (std::is_same_v<T, Digest32> || std::is_same_v<T, Bytes>) {
    std::vector<uint8_t> bytes;
    if (format == Format::kCbor) {
      if (!in.is_binary()) return TypeError(path, "a byte string", in);
      bytes = in.get_binary();
    } else {
      if (!in.is_string() || !BytesOfHex(in.get<std::string>(), &bytes)) {
        return arrow::Status::Invalid(path, ": expected hex text");
      }
    }
    if constexpr (std::is_same_v<T, Digest32>) {
      if (bytes.size() != out->size()) {
        return arrow::Status::Invalid(path, ": expected 32 bytes, got ", bytes.size());
      }
      std::copy(bytes.begin(), bytes.end(), out->begin());
    } else {
      out->data = std::move(bytes);
    }
  } else if constexpr (IsOptional<T>::value) {
    if (in.is_null()) {
      out->reset();
    } else {
      typename T::value_type value{};
      ARROW_RETURN_NOT_OK(Decode(in, path, format, &value));
      *out = std::move(value);
    }
  } else if constexpr (IsVector<T>::value) {
    if (!in.is_array()) return TypeError(path, "an array", in);
    out->clear();
    out->reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      typename T::value_type item{};
      ARROW_RETURN_NOT_OK(Decode(in[i], path + "[" + std::to_string(i) + "]", format, &item));
      out->push_back(std::move(item));
    }
  } else if constexpr (RecordType<T>) {
    if (!in.is_object()) return TypeError(path, "an object", in);
    size_t known = 0;
    arrow::Status st;
    ForEachField<T>([&](auto field) {
      if (!st.ok()) return;
      const std::string key(field.name);
      const std::string child = path + "." + key;
      auto it = in.find(key);
      using Member = std::remove_reference_t<decltype(out->*(field.member))>;
      if (it == in.end()) {
        if constexpr (IsOptional<Member>::value) {
          (out->*(field.member)).reset();
        } else {
          st = arrow::Status::Invalid(child, ": missing required field");
        }
        return;
      }
      ++known;
      st = Decode(*it, child, format, &(out->*(field.member)));
    });
    ARROW_RETURN_NOT_OK(st);
    if (known != in.size()) {
      for (auto it = in.begin(); it != in.end(); ++it) {
        bool found = false;
        ForEachField<T>([&](auto field) { found = found || field.name == it.key(); });
        if (!found) return arrow::Status::Invalid(path, ".", it.key(), ": unknown field");
      }
    }
  }
  return arrow::Status::OK();
}

}  // namespace internal

template <typename T>
nlohmann::json Encode(const T& value, Format format) {
  return internal::EncodeLeaf(value, format);
}

template <typename T>
arrow::Status Decode(const nlohmann::json& in, const std::string& path, Format format, T* out) {
  return internal::DecodeLeaf(in, path, format, out);
}

/// JSON text of a record (compact, keys in declaration order is not promised: nlohmann sorts).
template <RecordType T>
std::string ToJson(const T& record) {
  return Encode(record, Format::kJson).dump();
}

/// Parses a record from JSON text. Errors name the path and, through `where`, the source.
template <RecordType T>
arrow::Result<T> FromJson(std::string_view text, std::string_view where = "json") {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return arrow::Status::Invalid(where, ": not valid JSON");
  T out{};
  arrow::Status st = Decode(doc, "$", Format::kJson, &out);
  if (!st.ok()) return arrow::Status::Invalid(where, ": ", st.message());
  return out;
}

/// CBOR bytes of a record: a map with text keys in sorted order and minimal-length integers.
template <RecordType T>
std::vector<uint8_t> ToCbor(const T& record) {
  return nlohmann::json::to_cbor(Encode(record, Format::kCbor));
}

/// Decodes a record from CBOR bytes (untrusted: malformed input is an error, never a crash).
template <RecordType T>
arrow::Result<T> FromCbor(const uint8_t* data, size_t size, std::string_view where = "cbor") {
  nlohmann::json doc = nlohmann::json::from_cbor(data, data + size, /*strict=*/true,
                                                 /*allow_exceptions=*/false);
  if (doc.is_discarded()) return arrow::Status::Invalid(where, ": not valid CBOR");
  T out{};
  arrow::Status st = Decode(doc, "$", Format::kCbor, &out);
  if (!st.ok()) return arrow::Status::Invalid(where, ": ", st.message());
  return out;
}

}  // namespace sluice::schemas
