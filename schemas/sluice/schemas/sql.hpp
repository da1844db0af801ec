// The SQL DDL projection of schema records (record.hpp), in PostgreSQL's dialect. Nested lists
// and records become JSONB, holding the record's JSON form.
#pragma once

#include <string>

#include "sluice/schemas/record.hpp"

namespace sluice::schemas {

template <typename T>
std::string SqlType() {
  if constexpr (std::is_same_v<T, bool>) {
    return "BOOLEAN";
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return "INTEGER";
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return "BIGINT";
  } else if constexpr (std::is_same_v<T, double>) {
    return "DOUBLE PRECISION";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "TEXT";
  } else if constexpr (std::is_same_v<T, Timestamp>) {
    return "TIMESTAMPTZ";
  } else if constexpr (std::is_same_v<T, Digest32> || std::is_same_v<T, Bytes>) {
    return "BYTEA";
  } else if constexpr (IsOptional<T>::value) {
    return SqlType<typename T::value_type>();
  } else {
    return "JSONB";
  }
}

/// CREATE TABLE for a record; non-optional fields are NOT NULL.
template <RecordType T>
std::string CreateTableSql(const std::string& table) {
  std::string sql = "CREATE TABLE " + table + " (";
  bool first = true;
  ForEachField<T>([&](auto field) {
    using Member = std::remove_reference_t<decltype(std::declval<T&>().*(field.member))>;
    sql += first ? "\n  " : ",\n  ";
    first = false;
    sql += std::string(field.name) + " " + SqlType<Member>();
    if (!IsOptional<Member>::value) sql += " NOT NULL";
  });
  return sql + "\n);";
}

}  // namespace sluice::schemas
