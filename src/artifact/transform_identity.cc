#include "artifact/transform_identity.h"

#include <sluice/transform_abi.h>

#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "storage/schema_message.h"

namespace sluice::artifact {

bool IsValidIdentifier(std::string_view name) {
  if (name.empty() || name.size() > 200) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

arrow::Result<TransformIdentity> TransformIdentity::Parse(std::string_view bytes,
                                                          std::string_view where) {
  constexpr std::string_view kMagic = SLUICE_TRANSFORM_IDENTITY_MAGIC;
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return arrow::Status::Invalid(where, ": identity does not start with '",
                                  kMagic.substr(0, kMagic.size() - 1), "'");
  }
  std::string_view text = bytes.substr(kMagic.size());
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) text = text.substr(0, nul);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return arrow::Status::Invalid(where, ": identity is not a JSON object: ", text);
  }
  TransformIdentity id;
  auto abi = doc.find("abi_version");
  if (abi == doc.end() || !abi->is_number_unsigned()) {
    return arrow::Status::Invalid(where,
                                  ": identity field 'abi_version' is missing or not an "
                                  "unsigned integer");
  }
  id.abi_version = abi->get<uint32_t>();
  struct Field {
    const char* name;
    std::string* out;
  };
  for (Field f :
       {Field{"qualified_name", &id.qualified_name}, Field{"version", &id.version},
        Field{"input_schema", &id.input_schema}, Field{"output_schema", &id.output_schema}}) {
    auto it = doc.find(f.name);
    if (it == doc.end() || !it->is_string()) {
      return arrow::Status::Invalid(where, ": identity field '", f.name,
                                    "' is missing or not a string");
    }
    *f.out = it->get<std::string>();
    if (!IsValidIdentifier(*f.out)) {
      return arrow::Status::Invalid(where, ": identity field '", f.name, "' value '", *f.out,
                                    "' is not a valid identifier ([A-Za-z0-9._-], 1-200 chars)");
    }
  }
  struct ArrowField {
    const char* name;
    const std::string& schema_id;
    const char* id_field;
    std::string* ipc;
    std::shared_ptr<arrow::Schema>* schema;
  };
  for (ArrowField f : {ArrowField{"input_arrow_schema", id.input_schema, "input_schema",
                                  &id.input_schema_ipc, &id.input_arrow_schema},
                       ArrowField{"output_arrow_schema", id.output_schema, "output_schema",
                                  &id.output_schema_ipc, &id.output_arrow_schema}}) {
    auto it = doc.find(f.name);
    if (it == doc.end()) continue;  // optional: ABI v1 libraries predate it
    const std::string what = std::string(where) + ": identity field '" + f.name + "'";
    if (!it->is_string()) return arrow::Status::Invalid(what, " is not a string");
    if (f.schema_id == kAnySchemaId) {
      return arrow::Status::Invalid(what, " is set, but ", f.id_field, " is '", kAnySchemaId,
                                    "', which has no schema");
    }
    // HexDecode's own message quotes the whole text, which is long here.
    auto bytes = HexDecode(it->get<std::string>(), what);
    if (!bytes.ok()) {
      return arrow::Status::Invalid(what, " is not hex: ",
                                    it->get<std::string>().size() % 2 != 0
                                        ? "odd length"
                                        : "a character outside [0-9a-fA-F]");
    }
    f.ipc->assign(bytes->begin(), bytes->end());
    ARROW_ASSIGN_OR_RAISE(*f.schema, storage::ReadSchemaMessage(*f.ipc, what));
  }
  return id;
}

bool TransformIdentity::operator==(const TransformIdentity& other) const {
  return abi_version == other.abi_version && qualified_name == other.qualified_name &&
         version == other.version && input_schema == other.input_schema &&
         output_schema == other.output_schema && input_schema_ipc == other.input_schema_ipc &&
         output_schema_ipc == other.output_schema_ipc;
}

}  // namespace sluice::artifact
