// The identity a transform library embeds as static data (include/sluice/transform_abi.h):
// who it is, which version, and which schemas it reads and writes. It is read from the ELF file
// by `transform check` and from the loaded library by the loader, and must agree with the stage
// and the metadata that reference it.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::artifact {

struct TransformIdentity {
  uint32_t abi_version = 0;
  std::string qualified_name;
  std::string version;
  std::string input_schema;
  std::string output_schema;

  /// Parses identity bytes: the magic line, one JSON object, optionally a trailing NUL.
  /// `where` names the library in errors.
  static arrow::Result<TransformIdentity> Parse(std::string_view bytes, std::string_view where);

  bool operator==(const TransformIdentity&) const = default;
};

/// True when `name` is a valid qualified name, version or schema id: non-empty, at most 200
/// characters of [A-Za-z0-9._-]. The identity is embedded as a JSON literal by a macro, so this
/// also keeps quotes and backslashes out of it.
bool IsValidIdentifier(std::string_view name);

}  // namespace sluice::artifact
