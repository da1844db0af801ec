// Function libraries as Arrow compute functions, so that plans call them by name like any other
// function and Acero runs them.
//
// A library function's name in plans and in Arrow's registry is "ext:<library digest>:<name>"
// (name-only encoding: the plan carries the name and the digest, never code or a pointer), and
// an aggregate is two functions, each with its hash_ form:
//   - "<...>:partial" updates a state per group and finishes with the state struct, which crosses
//     a shuffle;
//   - "<...>:merge" merges states per group and finishes with the library's finalize;
//   - "<...>" itself does both in one step, for a query that runs in one process.
// A window function is not an Arrow function (Arrow has no window kernels); the executor calls
// it once per partition through CallLibraryWindow.
// A process registers a library once per digest, after loading it through the verified loader
// (BLAKE3 first, then a sealed memfd).
//
// Every array the library returns is checked (type, length, ValidateFull) before Arrow sees it,
// and every failure is an error naming the function and its library.
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artifact/function_library.h"
#include "storage/object_store.h"

namespace sluice::plan {

inline constexpr char kLibraryFunctionPrefix[] = "ext:";
inline constexpr char kPartialSuffix[] = ":partial";
inline constexpr char kMergeSuffix[] = ":merge";

/// "ext:<digest>:<function>".
std::string LibraryFunctionName(const std::string& digest_hex, const std::string& function);

struct LibraryFunctionRef {
  std::string digest_hex;
  /// The function's own name, without a :partial or :merge suffix.
  std::string function;
};

/// The digest and function of an "ext:" name (with or without a suffix; a hash_ prefix is
/// dropped first); nullopt for any other name.
std::optional<LibraryFunctionRef> ParseLibraryFunctionName(const std::string& name);

/// Registers every function of a loaded library, verified as `digest_hex`. A digest registered
/// before is a no-op.
arrow::Status RegisterFunctionLibrary(const std::string& digest_hex,
                                      const std::shared_ptr<artifact::FunctionLibrary>& library);

/// Fetches the library `digest_hex` from `store` (through the cache in `cache_dir`), verifies,
/// loads and registers it, and returns it. Refuses a library whose qualified name this process
/// already has loaded from another digest, naming both digests: a name must mean one library in
/// a session.
arrow::Result<std::shared_ptr<artifact::FunctionLibrary>> EnsureFunctionLibrary(
    const std::shared_ptr<storage::ObjectStore>& store, const std::string& cache_dir,
    const std::string& digest_hex);

/// The library registered as `digest_hex`, or null.
std::shared_ptr<artifact::FunctionLibrary> RegisteredLibrary(const std::string& digest_hex);

/// The libraries this process has registered: qualified name -> digest.
std::map<std::string, std::string> RegisteredFunctionLibraries();

/// The return type of the registered library window function `name` ("ext:<digest>:<f>"); an
/// error naming the function and digest when it is not registered here.
arrow::Result<std::shared_ptr<arrow::DataType>> LibraryWindowType(const std::string& name);

/// Calls the library window function `name` over one partition's rows, in window order:
/// `args` are its arguments' columns (cast to the declared types), `peer_groups` each row's
/// peer group number. Returns one value per row, checked as every library result is.
arrow::Result<std::shared_ptr<arrow::Array>> CallLibraryWindow(
    const std::string& name, const arrow::ArrayVector& args,
    const std::vector<int64_t>& peer_groups);

/// The message for a plan that calls `name` when its library is not registered here.
std::string MissingLibraryFunctionMessage(const LibraryFunctionRef& ref);

}  // namespace sluice::plan
