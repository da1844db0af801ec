// Reads what `transform check` needs from a shared library without loading it: whether it is a
// shared object, which symbols it exports, and the bytes of a named section. Loading untrusted
// code just to inspect it would run its constructors; libelf only parses the file.
#pragma once

#include <arrow/result.h>

#include <optional>
#include <set>
#include <string>

namespace sluice::artifact {

struct ElfFile {
  /// ET_DYN: a shared object (or PIE).
  bool is_shared_object = false;
  /// Defined global and weak symbols of the dynamic symbol table.
  std::set<std::string> exported_symbols;
  /// Contents of the requested section, if present.
  std::optional<std::string> section;

  /// Parses `path`. A file that is not ELF is an Invalid error naming it.
  static arrow::Result<ElfFile> Read(const std::string& path, const std::string& section_name);
};

}  // namespace sluice::artifact
