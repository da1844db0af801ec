#include "sql/type_resolution.h"

#include <arrow/type.h>
#include <arrow/type_traits.h>

#include <algorithm>

namespace sluice::sql {

namespace {

std::shared_ptr<arrow::DataType> ValueType(const std::shared_ptr<arrow::DataType>& t) {
  if (t->id() == arrow::Type::DICTIONARY) {
    return static_cast<const arrow::DictionaryType&>(*t).value_type();
  }
  if (t->id() == arrow::Type::LARGE_STRING || t->id() == arrow::Type::STRING_VIEW) {
    return arrow::utf8();
  }
  return t;
}

// The decimal that holds every value of an integer or decimal type: (precision, scale).
std::pair<int32_t, int32_t> DecimalShape(const arrow::DataType& t) {
  if (arrow::is_decimal(t.id())) {
    const auto& d = static_cast<const arrow::DecimalType&>(t);
    return {d.precision(), d.scale()};
  }
  // Digits of the widest value of each integer width.
  switch (t.id()) {
    case arrow::Type::INT8:
    case arrow::Type::UINT8:
      return {3, 0};
    case arrow::Type::INT16:
    case arrow::Type::UINT16:
      return {5, 0};
    case arrow::Type::INT32:
    case arrow::Type::UINT32:
      return {10, 0};
    default:
      return {20, 0};
  }
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::DataType>> CommonType(
    const std::shared_ptr<arrow::DataType>& a_in, const std::shared_ptr<arrow::DataType>& b_in) {
  const auto a = ValueType(a_in);
  const auto b = ValueType(b_in);
  if (a->Equals(*b)) return a;
  if (a->id() == arrow::Type::NA) return b;
  if (b->id() == arrow::Type::NA) return a;
  const bool a_int = arrow::is_integer(a->id()), b_int = arrow::is_integer(b->id());
  const bool a_dec = a->id() == arrow::Type::DECIMAL128, b_dec = b->id() == arrow::Type::DECIMAL128;
  if (a_int && b_int) {
    const auto& wa = static_cast<const arrow::FixedWidthType&>(*a);
    const auto& wb = static_cast<const arrow::FixedWidthType&>(*b);
    // An unsigned one (only from a file): a type that holds both, uint64 and int64 meeting in
    // decimal(20, 0).
    if (arrow::is_unsigned_integer(a->id()) || arrow::is_unsigned_integer(b->id())) {
      return ExactCommonType(a, b);
    }
    // Signed SQL integers: the wider of the two.
    const int bits = std::max(wa.bit_width(), wb.bit_width());
    if (bits <= 16) return arrow::int16();
    if (bits <= 32) return arrow::int32();
    return arrow::int64();
  }
  if ((a_int || a_dec) && (b_int || b_dec)) {
    const auto [pa, sa] = DecimalShape(*a);
    const auto [pb, sb] = DecimalShape(*b);
    const int32_t scale = std::max(sa, sb);
    const int32_t digits = std::max(pa - sa, pb - sb);
    return arrow::decimal128(std::min(38, digits + scale), scale);
  }
  const bool a_num = a_int || a_dec || arrow::is_floating(a->id());
  const bool b_num = b_int || b_dec || arrow::is_floating(b->id());
  if (a_num && b_num) return arrow::float64();
  // A date beside a timestamp is midnight of its day; two timestamps meet in the finer unit,
  // with a zone where either has one (PostgreSQL's timestamptz).
  const bool a_time = a->id() == arrow::Type::TIMESTAMP, b_time = b->id() == arrow::Type::TIMESTAMP;
  if ((a_time || a->id() == arrow::Type::DATE32) && (b_time || b->id() == arrow::Type::DATE32)) {
    const auto* ta = a_time ? &static_cast<const arrow::TimestampType&>(*a) : nullptr;
    const auto* tb = b_time ? &static_cast<const arrow::TimestampType&>(*b) : nullptr;
    const auto unit = std::max(ta ? ta->unit() : arrow::TimeUnit::MICRO,
                               tb ? tb->unit() : arrow::TimeUnit::MICRO);
    const std::string zone = ta && !ta->timezone().empty()   ? ta->timezone()
                             : tb && !tb->timezone().empty() ? tb->timezone()
                                                             : "";
    return arrow::timestamp(unit, zone);
  }
  return arrow::Status::TypeError("types ", a->ToString(), " and ", b->ToString(),
                                  " cannot be matched");
}

std::shared_ptr<arrow::DataType> ExactCommonType(const std::shared_ptr<arrow::DataType>& a,
                                                 const std::shared_ptr<arrow::DataType>& b) {
  const bool a_int = arrow::is_integer(a->id()), b_int = arrow::is_integer(b->id());
  const bool a_dec = a->id() == arrow::Type::DECIMAL128, b_dec = b->id() == arrow::Type::DECIMAL128;
  if (!(a_int || a_dec) || !(b_int || b_dec)) return nullptr;
  if (a->Equals(*b)) return a;
  if (a_int && b_int) {
    const int wa = static_cast<const arrow::FixedWidthType&>(*a).bit_width();
    const int wb = static_cast<const arrow::FixedWidthType&>(*b).bit_width();
    const bool sa = arrow::is_signed_integer(a->id()), sb = arrow::is_signed_integer(b->id());
    if (sa == sb) return wa >= wb ? a : b;
    const auto& s = sa ? a : b;
    const int ws = sa ? wa : wb, wu = sa ? wb : wa;
    if (ws > wu) return s;
    switch (wu) {
      case 8:
        return arrow::int16();
      case 16:
        return arrow::int32();
      case 32:
        return arrow::int64();
      default:
        return arrow::decimal128(20, 0);
    }
  }
  // int64's widest value has 19 digits (DecimalShape allows 20 for uint64).
  auto shape = [](const arrow::DataType& t) {
    return t.id() == arrow::Type::INT64 ? std::pair<int32_t, int32_t>{19, 0} : DecimalShape(t);
  };
  const auto [pa, sa] = shape(*a);
  const auto [pb, sb] = shape(*b);
  const int32_t scale = std::max(sa, sb);
  const int32_t digits = std::max(pa - sa, pb - sb);
  if (digits + scale > 38) return nullptr;
  if (a_dec && pa == digits + scale && sa == scale) return a;
  if (b_dec && pb == digits + scale && sb == scale) return b;
  return arrow::decimal128(digits + scale, scale);
}

}  // namespace sluice::sql
