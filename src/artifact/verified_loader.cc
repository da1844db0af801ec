#include "artifact/verified_loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "common/status.h"

namespace sluice::artifact {

namespace {

namespace fs = std::filesystem;

std::shared_ptr<arrow::Buffer> ReadWholeFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return nullptr;
  return arrow::Buffer::FromString(std::move(bytes));
}

// Writes the cache entry through a temp file and a rename, so readers never see half a file.
void WriteCache(const fs::path& path, const arrow::Buffer& bytes) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path temp =
      path.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(gettid());
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (!out) {
      fs::remove(temp, ec);
      return;  // a cache that cannot be written only costs a fetch next time
    }
  }
  fs::rename(temp, path, ec);
  if (ec) fs::remove(temp, ec);
}

}  // namespace

std::string TransformObjectKey(const Digest& digest) {
  return "transforms/batch/" + digest.ToHex() + ".so";
}

ArtifactCache::ArtifactCache(std::shared_ptr<storage::ObjectStore> store, std::string cache_dir)
    : store_(std::move(store)), cache_dir_(std::move(cache_dir)) {}

std::string FunctionLibraryObjectKey(const Digest& digest) {
  return "functions/" + digest.ToHex() + ".so";
}

std::string ArtifactObjectKey(ArtifactKind kind, const Digest& digest) {
  return kind == ArtifactKind::kTransform ? TransformObjectKey(digest)
                                          : FunctionLibraryObjectKey(digest);
}

std::string ArtifactCache::CachePath(const Digest& pin, ArtifactKind kind) const {
  return (fs::path(cache_dir_) / (kind == ArtifactKind::kTransform ? "transforms" : "functions") /
          (pin.ToHex() + ".so"))
      .string();
}

arrow::Result<VerifiedArtifact> ArtifactCache::FetchVerified(const Digest& pin,
                                                             ArtifactKind kind) const {
  const fs::path cache = CachePath(pin, kind);
  if (auto cached = ReadWholeFile(cache)) {
    if (Blake3(*cached) == pin) return VerifiedArtifact{pin, cached};
    // A corrupt or tampered cache entry is never used; the store has the truth.
    std::error_code ec;
    fs::remove(cache, ec);
  }
  const std::string key = ArtifactObjectKey(kind, pin);
  ARROW_ASSIGN_OR_RAISE(bool exists, store_->Exists(key));
  if (!exists) {
    return arrow::Status::IOError(
        "artifact ", pin.ToHex(), " is not in store ", store_->display_url(), " (expected object '",
        key, "'); publish it with `sluice ",
        kind == ArtifactKind::kTransform ? "transform" : "function", " publish`");
  }
  ARROW_ASSIGN_OR_RAISE(auto bytes, store_->Get(key));
  const Digest actual = Blake3(*bytes);
  if (actual != pin) {
    return arrow::Status::Invalid("artifact ", pin.ToHex(), " in store ", store_->display_url(),
                                  " fails verification: its bytes hash to ", actual.ToHex(),
                                  "; refusing to load it");
  }
  WriteCache(cache, *bytes);
  return VerifiedArtifact{pin, bytes};
}

namespace {

// Every library loaded from a memfd, by digest, for the life of the process. The dynamic loader
// recognises an already-loaded library by its path, and /proc/self/fd/N is only a path: once a
// descriptor is closed, the next artifact's memfd may get the same N and dlopen would hand back
// the library loaded before under that name (wrong code, silently, for two versions of one
// transform). Keeping each memfd open keeps its N unique among loaded libraries, and a digest
// loaded twice is the same bytes, so it is the same library.
struct LoadedLibraries {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<TransformLibrary>> by_digest;  // hex digest
};

LoadedLibraries& Loaded() {
  static auto* loaded = new LoadedLibraries();  // never destroyed: libraries stay mapped
  return *loaded;
}

// Copies verified bytes into a sealed memfd and returns the path to dlopen it by. The
// descriptor stays open for the life of the process (see LoadedLibraries): it is the library's
// name, also when loading fails after dlopen.
arrow::Result<std::string> SealedMemfdPath(const VerifiedArtifact& artifact,
                                           const std::string& where) {
  const int fd = memfd_create(("sluice-" + artifact.digest.ToHex().substr(0, 16)).c_str(),
                              MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return arrow::Status::IOError(where, ": memfd_create failed: ", strerror(errno));
  const uint8_t* data = artifact.bytes->data();
  int64_t left = artifact.bytes->size();
  while (left > 0) {
    const ssize_t n = write(fd, data, static_cast<size_t>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return arrow::Status::IOError(where, ": writing the memfd failed: ", strerror(errno));
    }
    data += n;
    left -= n;
  }
  // Sealed: nobody, including this process, can change the bytes between here and dlopen.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    close(fd);
    return arrow::Status::IOError(where, ": sealing the memfd failed: ", strerror(errno));
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

arrow::Result<std::shared_ptr<TransformLibrary>> LoadFromSealedMemfd(
    const VerifiedArtifact& artifact, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(std::string path, SealedMemfdPath(artifact, where));
  // dlopen may succeed before a later check fails, and a library the dynamic loader cannot
  // unload (a C++ one with unique symbols) then stays known by this path; the descriptor stays
  // open so no other artifact is ever given the same path.
  auto library = TransformLibrary::Open(path);
  if (!library.ok()) return AddContext(library.status(), where);
  return library;
}

struct LoadedFunctionLibraries {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<FunctionLibrary>> by_digest;  // hex digest
};

LoadedFunctionLibraries& LoadedFunctions() {
  static auto* loaded = new LoadedFunctionLibraries();  // never destroyed: libraries stay mapped
  return *loaded;
}

}  // namespace

arrow::Result<std::shared_ptr<TransformLibrary>> LoadVerified(
    const VerifiedArtifact& artifact, const std::string& expected_qualified_name) {
  const std::string where = "artifact " + artifact.digest.ToHex();
  // Re-check here too: LoadVerified must never be the first place unverified bytes arrive.
  if (Blake3(*artifact.bytes) != artifact.digest) {
    return arrow::Status::Invalid(where, ": bytes do not match the digest; refusing to load");
  }
  std::shared_ptr<TransformLibrary> library;
  {
    LoadedLibraries& loaded = Loaded();
    std::lock_guard<std::mutex> lock(loaded.mutex);
    auto it = loaded.by_digest.find(artifact.digest.ToHex());
    if (it != loaded.by_digest.end()) {
      library = it->second;
    } else {
      ARROW_ASSIGN_OR_RAISE(library, LoadFromSealedMemfd(artifact, where));
      loaded.by_digest.emplace(artifact.digest.ToHex(), library);
    }
  }
  if (library->identity().qualified_name != expected_qualified_name) {
    return arrow::Status::Invalid(where, " is transform '", library->identity().qualified_name,
                                  "', but the stage names '", expected_qualified_name,
                                  "'; refusing to run it");
  }
  return library;
}

arrow::Result<std::shared_ptr<FunctionLibrary>> LoadVerifiedFunctionLibrary(
    const VerifiedArtifact& artifact) {
  const std::string where = "function library " + artifact.digest.ToHex();
  if (Blake3(*artifact.bytes) != artifact.digest) {
    return arrow::Status::Invalid(where, ": bytes do not match the digest; refusing to load");
  }
  LoadedFunctionLibraries& loaded = LoadedFunctions();
  std::lock_guard<std::mutex> lock(loaded.mutex);
  auto it = loaded.by_digest.find(artifact.digest.ToHex());
  if (it != loaded.by_digest.end()) return it->second;
  ARROW_ASSIGN_OR_RAISE(std::string path, SealedMemfdPath(artifact, where));
  ARROW_ASSIGN_OR_RAISE(auto library, FunctionLibrary::Open(path, where));
  loaded.by_digest.emplace(artifact.digest.ToHex(), library);
  return library;
}

}  // namespace sluice::artifact
