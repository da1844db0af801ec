#include "artifact/transform_library.h"

#include <dlfcn.h>

#include <cstring>

namespace sluice::artifact {

arrow::Result<std::shared_ptr<TransformLibrary>> TransformLibrary::Open(const std::string& path) {
  const std::string where = "transform library '" + path + "'";
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return arrow::Status::IOError(where, ": cannot load: ", err ? err : "unknown dlopen error");
  }
  std::shared_ptr<TransformLibrary> lib(new TransformLibrary());
  lib->path_ = path;
  lib->handle_ = handle;

  auto* version = static_cast<const uint32_t*>(dlsym(handle, SLUICE_TRANSFORM_ABI_VERSION_SYMBOL));
  if (version == nullptr) {
    return arrow::Status::Invalid(where, ": does not export '", SLUICE_TRANSFORM_ABI_VERSION_SYMBOL,
                                  "'");
  }
  lib->abi_version_ = *version;
  if (lib->abi_version_ != SLUICE_TRANSFORM_ABI_VERSION) {
    return arrow::Status::Invalid(where, ": speaks transform ABI version ", lib->abi_version_,
                                  "; this host speaks version ", SLUICE_TRANSFORM_ABI_VERSION);
  }
  lib->fn_ =
      reinterpret_cast<sluice_transform_batch_fn>(dlsym(handle, SLUICE_TRANSFORM_BATCH_SYMBOL));
  if (lib->fn_ == nullptr) {
    return arrow::Status::Invalid(where, ": does not export '", SLUICE_TRANSFORM_BATCH_SYMBOL, "'");
  }
  // Optional: libraries built before the Arrow C data entry existed have only the bytes one.
  lib->arrow_fn_ = reinterpret_cast<sluice_transform_batch_arrow_fn>(
      dlsym(handle, SLUICE_TRANSFORM_BATCH_ARROW_SYMBOL));
  auto* identity = static_cast<const char*>(dlsym(handle, SLUICE_TRANSFORM_IDENTITY_SYMBOL));
  if (identity == nullptr) {
    return arrow::Status::Invalid(where, ": does not export its identity '",
                                  SLUICE_TRANSFORM_IDENTITY_SYMBOL, "'");
  }
  // The identity is NUL-terminated static data; cap the scan so a broken library cannot make
  // us read forever.
  const size_t len = strnlen(identity, 64 * 1024);
  ARROW_ASSIGN_OR_RAISE(lib->identity_,
                        TransformIdentity::Parse(std::string_view(identity, len), where));
  if (lib->identity_.abi_version != lib->abi_version_) {
    return arrow::Status::Invalid(where, ": identity says ABI version ", lib->identity_.abi_version,
                                  " but the library exports ", lib->abi_version_);
  }
  return lib;
}

TransformLibrary::~TransformLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace sluice::artifact
