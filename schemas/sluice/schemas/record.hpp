// Schema micro-libraries: one checked-in C++ record type per schema, with a stable type id.
//
// A record lists its fields once, in a static Fields() function:
//
//   struct Point {
//     static constexpr char kTypeId[] = "my.geo.Point";
//     int64_t x = 0;
//     std::optional<std::string> label;
//     static constexpr auto Fields() {
//       return std::make_tuple(sluice::schemas::Field("x", &Point::x),
//                              sluice::schemas::Field("label", &Point::label));
//     }
//   };
//
// Everything else derives from that one declaration (see codec headers beside this one):
//   - CBOR, the stored and wire form (cbor.hpp);
//   - JSON (json.hpp);
//   - the Arrow schema and batches, as a projection (arrow.hpp);
//   - SQL DDL (sql.hpp).
//
// Supported member types: bool, int32_t, int64_t, double, std::string, Timestamp, Digest32,
// Bytes, std::optional<T> (the only nullable form), std::vector<T>, and nested records.
// Header-only, so transform libraries use the same types as the host without linking sluice.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace sluice::schemas {

/// Microseconds since the Unix epoch, UTC. JSON form: RFC 3339 text
/// ("2026-01-02T03:04:05.123456Z").
struct Timestamp {
  int64_t micros = 0;
  bool operator==(const Timestamp&) const = default;
};

/// A 32-byte digest (BLAKE3). JSON form: 64 lower-case hex characters.
using Digest32 = std::array<uint8_t, 32>;

/// Variable-length bytes. JSON form: lower-case hex.
struct Bytes {
  std::vector<uint8_t> data;
  bool operator==(const Bytes&) const = default;
};

/// One field of a record: its stable name and where it lives.
template <typename Record, typename T>
struct FieldRef {
  std::string_view name;
  T Record::*member;
};

template <typename Record, typename T>
constexpr FieldRef<Record, T> Field(std::string_view name, T Record::*member) {
  return {name, member};
}

template <typename T>
concept RecordType = requires {
  T::Fields();
};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

/// Calls fn(field) for every field of Record, in declaration order.
template <RecordType Record, typename Fn>
constexpr void ForEachField(Fn&& fn) {
  std::apply([&](auto... field) { (fn(field), ...); }, Record::Fields());
}

}  // namespace sluice::schemas
