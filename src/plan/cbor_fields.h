// Reading and writing the CBOR maps that plan bytes are made of. Plan bytes come from other
// processes, so every accessor turns a missing or mistyped field into an Invalid error naming
// it, never an exception. Schemas travel as Arrow IPC schema messages.
#pragma once

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cbor_shape.h"

namespace sluice::plan {

/// `magic` followed by the CBOR of `doc`.
std::vector<uint8_t> WithMagic(const char* magic, const nlohmann::json& doc);
/// common/cbor_shape.h's check, with messages that start "plan:".
inline arrow::Status CheckCborShape(const uint8_t* data, size_t size, int max_depth) {
  return ::sluice::CheckCborShape(data, size, max_depth, "plan");
}

/// Plan fragments nest four levels deep (document, operator list, operator, key list); the
/// default limit leaves room for formats to grow, far from where nlohmann's recursion would end
/// the stack.
inline constexpr int kDefaultMaxCborDepth = 64;

/// The CBOR body after `magic`, checked by CheckCborShape with `max_depth` before it is decoded.
/// Bytes that start with `family` (e.g. "SLUICE-PLAN/") but carry another version are refused by
/// name.
arrow::Result<nlohmann::json> BodyAfterMagic(const uint8_t* data, size_t size, const char* magic,
                                             const char* family,
                                             int max_depth = kDefaultMaxCborDepth);

/// A schema as an IPC schema message (CBOR bytes); null for a null schema.
arrow::Result<nlohmann::json> SchemaBytes(const std::shared_ptr<arrow::Schema>& schema);
arrow::Result<std::shared_ptr<arrow::Schema>> SchemaFrom(const nlohmann::json& value);

arrow::Result<const nlohmann::json*> Field(const nlohmann::json& obj, const char* key);
arrow::Result<std::string> Text(const nlohmann::json& obj, const char* key);
arrow::Result<int64_t> Int(const nlohmann::json& obj, const char* key);
arrow::Result<bool> Bool(const nlohmann::json& obj, const char* key);
arrow::Result<std::vector<std::string>> TextList(const nlohmann::json& obj, const char* key);
/// A CBOR byte string.
arrow::Result<std::shared_ptr<arrow::Buffer>> Bytes(const nlohmann::json& obj, const char* key);

}  // namespace sluice::plan
