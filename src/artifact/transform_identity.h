// The identity a transform library embeds as static data (include/sluice/transform_abi.h):
// who it is, which version, and which schemas it reads and writes. It is read from the ELF file
// by `transform check` and from the loaded library by the loader, and must agree with the stage
// and the metadata that reference it.
//
// A schema is named by an id and, since schemas travel with the artifact, may carry its Arrow
// schema as an IPC schema message (hex in the identity). Both are optional for ABI v1
// compatibility, but a typed (non-`any`) input schema needs its Arrow schema before a source can
// be parsed for it. `any` has no Arrow schema.
#pragma once

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace sluice::artifact {

struct TransformIdentity {
  uint32_t abi_version = 0;
  std::string qualified_name;
  std::string version;
  std::string input_schema;
  std::string output_schema;
  /// The IPC schema messages of the identity's input_arrow_schema and output_arrow_schema
  /// fields, as bytes; empty when absent.
  std::string input_schema_ipc;
  std::string output_schema_ipc;
  /// The same, decoded; null when absent.
  std::shared_ptr<arrow::Schema> input_arrow_schema;
  std::shared_ptr<arrow::Schema> output_arrow_schema;

  /// Parses identity bytes: the magic line, one JSON object, optionally a trailing NUL.
  /// `where` names the library in errors.
  static arrow::Result<TransformIdentity> Parse(std::string_view bytes, std::string_view where);

  /// Equal fields and schema bytes (the decoded schemas follow from the bytes).
  bool operator==(const TransformIdentity& other) const;
};

/// The schema id that stands for "whatever arrives": it has no Arrow schema.
inline constexpr char kAnySchemaId[] = "any";

/// True when `name` is a valid qualified name, version or schema id: non-empty, at most 200
/// characters of [A-Za-z0-9._-]. The identity is embedded as a JSON literal by a macro, so this
/// also keeps quotes and backslashes out of it.
bool IsValidIdentifier(std::string_view name);

}  // namespace sluice::artifact
