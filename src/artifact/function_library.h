// A function library (include/sluice/function_abi.h): its identity, read from the ELF file by
// `function check` or from the loaded library, and the loaded library with its function table
// checked against that identity.
//
// The identity is what SQL binds against (names, argument and return types, an aggregate's state
// type), so the loaded table must agree with it entry by entry: a library whose code and
// identity disagree is refused, naming the entry.
//
// Thread-safety: immutable after Open; its functions may be called from several threads.
#pragma once

#include <arrow/result.h>
#include <arrow/type_fwd.h>
#include <sluice/function_abi.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::artifact {

struct FunctionSignature {
  std::string name;
  enum class Kind { kScalar, kAggregate, kWindow } kind = Kind::kScalar;
  std::vector<std::shared_ptr<arrow::DataType>> arguments;
  std::shared_ptr<arrow::DataType> returns;
  /// Aggregates: the struct that one group's partial state is.
  std::shared_ptr<arrow::DataType> state;
};

struct FunctionIdentity {
  uint32_t abi_version = 0;
  std::string qualified_name;
  std::string version;
  std::vector<FunctionSignature> functions;
  /// The table providers' names, in the provider table's order.
  std::vector<std::string> tables;

  /// Parses identity bytes: the magic line, one JSON object, optionally a trailing NUL. Every
  /// error names `where` and the function or field at fault.
  static arrow::Result<FunctionIdentity> Parse(std::string_view bytes, std::string_view where);

  /// The function called `name`, or null.
  const FunctionSignature* Find(const std::string& name) const;
};

/// The type a C Data Interface format string ("g", "d:15,2", ...) describes. Invalid names
/// `where`.
arrow::Result<std::shared_ptr<arrow::DataType>> TypeFromFormat(const std::string& format,
                                                               std::string_view where);

class FunctionLibrary {
 public:
  /// dlopens `path` and checks, in order: the ABI symbols exist, the ABI version is one this
  /// host speaks, the identity is well-formed, and the function table agrees with it. `where`
  /// names the library in errors (its path, or the artifact digest).
  static arrow::Result<std::shared_ptr<FunctionLibrary>> Open(const std::string& path,
                                                              const std::string& where);
  ~FunctionLibrary();

  FunctionLibrary(const FunctionLibrary&) = delete;
  FunctionLibrary& operator=(const FunctionLibrary&) = delete;

  const FunctionIdentity& identity() const { return identity_; }
  /// The table entry of identity().functions[i].
  const sluice_function_entry& entry(size_t i) const { return table_->functions[i]; }
  /// The table provider called `name`, or null.
  const sluice_table_provider_entry* provider(const std::string& name) const;

 private:
  FunctionLibrary() = default;
  void* handle_ = nullptr;
  const sluice_function_table* table_ = nullptr;
  const sluice_table_provider_table* providers_ = nullptr;
  FunctionIdentity identity_;
};

}  // namespace sluice::artifact
