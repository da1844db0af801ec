#include "storage/object_store.h"

#include <arrow/filesystem/filesystem.h>
#include <arrow/filesystem/localfs.h>
#include <arrow/io/file.h>
#include <arrow/io/interfaces.h>
#include <arrow/util/config.h>
#include <arrow/util/thread_pool.h>
#include <link.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>

#include "common/status.h"

namespace sluice::storage {

namespace {

// Every temp object's base name starts with this; List and ValidateKey treat it as reserved.
constexpr std::string_view kTempPrefix = ".sluice-tmp-";

std::string_view BaseName(std::string_view key) {
  const size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}

// Masks the values of credentials that may appear in an S3 URL's query.
std::string MaskSecrets(const std::string& url) {
  std::string out = url;
  for (std::string_view name : {"secret_key=", "session_token=", "access_key="}) {
    size_t pos = 0;
    while ((pos = out.find(name, pos)) != std::string::npos) {
      const size_t start = pos + name.size();
      const size_t end = out.find('&', start);
      out.replace(start, (end == std::string::npos ? out.size() : end) - start, "***");
      pos = start;
    }
  }
  return out;
}

// A name unique to this writer: pid, a process-wide counter and randomness, so writers in
// different processes, threads or retries never share a temp file.
std::string UniqueTempName(std::string_view base) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ".%d.%llu.%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)),
                static_cast<unsigned long long>(rng()));
  return std::string(kTempPrefix) + std::string(base) + suffix;
}

// One pending write. On a local directory (temp_path set) the bytes go to a temp file beside
// the target, renamed over it on Commit. On S3 (temp_path empty) the stream writes the target
// itself, which becomes visible only when Close() completes the upload; Abort() cancels it.
class PendingWrite : public PendingObject {
 public:
  PendingWrite(std::shared_ptr<arrow::fs::FileSystem> fs, std::string key, std::string final_path,
               std::string temp_path, std::shared_ptr<arrow::io::OutputStream> stream)
      : fs_(std::move(fs)),
        key_(std::move(key)),
        final_path_(std::move(final_path)),
        temp_path_(std::move(temp_path)),
        stream_(std::move(stream)) {}
  ~PendingWrite() override {
    if (!done_) (void)Abort();
  }
  arrow::io::OutputStream* stream() override { return stream_.get(); }
  const std::string& key() const override { return key_; }

  arrow::Status Commit() override {
    if (done_) {
      return arrow::Status::Invalid("object '", key_, "' was already committed or aborted");
    }
    done_ = true;
    arrow::Status st = stream_->Close();
    if (st.ok() && !temp_path_.empty()) st = fs_->Move(temp_path_, final_path_);
    if (!st.ok()) {
      if (!temp_path_.empty()) (void)fs_->DeleteFile(temp_path_);
      return AddContext(st, "writing object '" + key_ + "'");
    }
    return arrow::Status::OK();
  }

  arrow::Status Abort() override {
    if (done_) return arrow::Status::OK();
    done_ = true;
    arrow::Status st = stream_->Abort();
    if (!temp_path_.empty()) st = fs_->DeleteFile(temp_path_);
    return st.ok() ? st : AddContext(st, "discarding object '" + key_ + "'");
  }

 private:
  std::shared_ptr<arrow::fs::FileSystem> fs_;
  std::string key_, final_path_, temp_path_;
  std::shared_ptr<arrow::io::OutputStream> stream_;
  bool done_ = false;
};

}  // namespace

arrow::Status ObjectStore::ValidateKey(std::string_view key) {
  auto bad = [&](std::string_view why) {
    return arrow::Status::Invalid("invalid object key '", key, "': ", why);
  };
  if (key.empty()) return bad("empty");
  if (key.front() == '/') return bad("must be relative, not start with '/'");
  if (key.back() == '/') return bad("must name an object, not end with '/'");
  if (key.find('\0') != std::string_view::npos) return bad("contains a NUL byte");
  if (key.find('\\') != std::string_view::npos) return bad("contains a backslash");
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view segment = key.substr(start, end - start);
    if (segment.empty()) return bad("contains an empty path segment");
    if (segment == "." || segment == "..") return bad("contains a '.' or '..' segment");
    if (segment.starts_with(kTempPrefix)) {
      return bad("names a reserved temporary object");
    }
    start = end + 1;
  }
  return arrow::Status::OK();
}

namespace {

// Arrow's S3 filesystem is a library of its own, loaded the first time an s3:// store opens
// rather than linked: loading it (its linking, and the AWS SDK's curl and OpenSSL set-up in its
// static initializers) cost every sluice process about 1 ms of an 11 ms start, file:// stores
// included. Loading registers the s3 scheme with FileSystemFromUri, whose factory initializes
// the SDK; FinalizeFilesystems shuts it down.
constexpr char kS3Module[] = "libarrow_s3.so." ARROW_SO_VERSION;
constexpr char kArrowLibrary[] = "/libarrow.so." ARROW_SO_VERSION;

// The module's path beside the libarrow this process loaded. A bare soname would be searched
// for from the caller of dlopen, which under ASan is its interceptor, not libarrow with its
// $ORIGIN run path.
std::string S3ModulePath() {
  std::string dir;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (!name.ends_with(kArrowLibrary)) return 0;
        *static_cast<std::string*>(out) = name.substr(0, name.size() - std::strlen(kArrowLibrary));
        return 1;
      },
      &dir);
  return dir.empty() ? kS3Module : dir + "/" + kS3Module;
}

arrow::Status EnsureS3Module() {
  static std::once_flag once;
  static arrow::Status loaded;
  std::call_once(once, [] {
    const std::string path = S3ModulePath();
    loaded = arrow::fs::LoadFileSystemFactories(path.c_str());
    if (!loaded.ok()) {
      loaded =
          arrow::Status::IOError("cannot load Arrow's S3 filesystem (", path,
                                 ", beside libarrow in the pyarrow wheel): ", loaded.message());
    }
  });
  return loaded;
}

}  // namespace

arrow::Result<std::shared_ptr<ObjectStore>> ObjectStore::Open(const std::string& url) {
  const std::string shown = MaskSecrets(url);
  auto malformed = [&](std::string_view why) {
    return arrow::Status::Invalid("store URL '", shown, "' is malformed: ", why,
                                  " (expected file:///absolute/dir or "
                                  "s3://bucket/prefix?endpoint_override=host:port)");
  };
  const size_t sep = url.find("://");
  if (sep == std::string::npos || sep == 0) return malformed("no scheme");
  const std::string scheme = url.substr(0, sep);
  const std::string rest = url.substr(sep + 3);
  bool local = false;
  if (scheme == "file") {
    if (rest.empty() || rest.front() != '/') {
      return malformed("a file URL needs an absolute path, as in file:///path");
    }
    if (rest.find('?') != std::string::npos) return malformed("a file URL takes no query");
    local = true;
  } else if (scheme == "s3") {
    if (rest.empty() || rest.front() == '/' || rest.front() == '?') {
      return malformed("an s3 URL needs a bucket, as in s3://bucket/prefix");
    }
    SLUICE_RETURN_NOT_OK_CTX(EnsureS3Module(), "store URL '" + shown + "'");
  } else {
    return arrow::Status::Invalid("store URL '", shown, "' has unsupported scheme '", scheme,
                                  "'; use file:// or s3://");
  }

  std::string root;
  auto fs = arrow::fs::FileSystemFromUri(url, &root);
  if (!fs.ok()) return AddContext(fs.status(), "store URL '" + shown + "'");
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty()) return malformed("empty root path");
  return std::shared_ptr<ObjectStore>(new ObjectStore(*std::move(fs), root, shown, local));
}

ObjectStore::ObjectStore(std::shared_ptr<arrow::fs::FileSystem> fs, std::string root,
                         std::string display_url, bool local)
    : fs_(std::move(fs)),
      root_(std::move(root)),
      display_url_(std::move(display_url)),
      local_(local) {}

std::string ObjectStore::PathOf(std::string_view key) const {
  return root_ == "/" ? "/" + std::string(key) : root_ + "/" + std::string(key);
}

arrow::Status ObjectStore::NotFound(std::string_view key) const {
  return arrow::Status::IOError("object '", key, "' does not exist in store ", display_url_);
}

arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> ObjectStore::OpenForRead(
    std::string_view key) const {
  ARROW_RETURN_NOT_OK(ValidateKey(key));
  auto file = fs_->OpenInputFile(PathOf(key));
  if (!file.ok()) {
    ARROW_ASSIGN_OR_RAISE(bool exists, Exists(key));
    if (!exists) return NotFound(key);
    return AddContext(file.status(), "reading object '" + std::string(key) + "'");
  }
  return file;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ObjectStore::Get(std::string_view key) const {
  ARROW_ASSIGN_OR_RAISE(auto file, OpenForRead(key));
  const std::string ctx = "reading object '" + std::string(key) + "'";
  auto size = file->GetSize();
  if (!size.ok()) return AddContext(size.status(), ctx);
  auto data = file->ReadAt(0, *size);
  if (!data.ok()) return AddContext(data.status(), ctx);
  if ((*data)->size() != *size) {
    return arrow::Status::IOError(ctx, ": short read, expected ", *size, " bytes, got ",
                                  (*data)->size());
  }
  return data;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ObjectStore::GetMapped(std::string_view key) const {
  if (!local_) return Get(key);
  ARROW_RETURN_NOT_OK(ValidateKey(key));
  const std::string ctx = "reading object '" + std::string(key) + "'";
  auto file = arrow::io::MemoryMappedFile::Open(PathOf(key), arrow::io::FileMode::READ);
  if (!file.ok()) {
    ARROW_ASSIGN_OR_RAISE(bool exists, Exists(key));
    if (!exists) return NotFound(key);
    return AddContext(file.status(), ctx);
  }
  auto size = (*file)->GetSize();
  if (!size.ok()) return AddContext(size.status(), ctx);
  // A slice of the mapping, which it keeps alive.
  auto data = (*file)->ReadAt(0, *size);
  if (!data.ok()) return AddContext(data.status(), ctx);
  return data;
}

arrow::Result<std::unique_ptr<PendingObject>> ObjectStore::Create(std::string_view key) {
  ARROW_RETURN_NOT_OK(ValidateKey(key));
  const std::string ctx = "writing object '" + std::string(key) + "' to " + display_url_;
  const std::string final_path = PathOf(key);
  if (local_) {
    const std::string dir = final_path.substr(0, final_path.rfind('/'));
    SLUICE_RETURN_NOT_OK_CTX(fs_->CreateDir(dir, /*recursive=*/true), ctx);
    const std::string temp_path = dir + "/" + UniqueTempName(BaseName(key));
    auto stream = fs_->OpenOutputStream(temp_path);
    if (!stream.ok()) return AddContext(stream.status(), ctx);
    return std::make_unique<PendingWrite>(fs_, std::string(key), final_path, temp_path,
                                          *std::move(stream));
  }
  auto stream = fs_->OpenOutputStream(final_path);
  if (!stream.ok()) return AddContext(stream.status(), ctx);
  return std::make_unique<PendingWrite>(fs_, std::string(key), final_path, "", *std::move(stream));
}

arrow::Status ObjectStore::Put(std::string_view key, const std::shared_ptr<arrow::Buffer>& data) {
  ARROW_ASSIGN_OR_RAISE(std::unique_ptr<PendingObject> pending, Create(key));
  arrow::Status st = pending->stream()->Write(data);
  if (!st.ok()) {
    (void)pending->Abort();
    return AddContext(st, "writing object '" + std::string(key) + "'");
  }
  return pending->Commit();
}

arrow::Result<std::vector<ObjectInfo>> ObjectStore::List(std::string_view prefix) const {
  if (!prefix.empty()) {
    if (prefix.front() == '/' || prefix.find("..") != std::string_view::npos ||
        prefix.find("//") != std::string_view::npos) {
      return arrow::Status::Invalid("invalid object prefix '", prefix,
                                    "': must be relative, without '..' or empty segments");
    }
  }
  const size_t slash = prefix.rfind('/');
  const std::string dir = slash == std::string_view::npos ? root_ : PathOf(prefix.substr(0, slash));
  arrow::fs::FileSelector selector;
  selector.base_dir = dir;
  selector.recursive = true;
  selector.allow_not_found = true;
  auto infos = ListSelector(selector);
  if (!infos.ok()) {
    return AddContext(infos.status(),
                      "listing prefix '" + std::string(prefix) + "' in " + display_url_);
  }
  const std::string root_slash = root_ == "/" ? "/" : root_ + "/";
  std::vector<ObjectInfo> out;
  for (const arrow::fs::FileInfo& info : *infos) {
    if (info.type() != arrow::fs::FileType::File) continue;
    const std::string& path = info.path();
    if (path.compare(0, root_slash.size(), root_slash) != 0) continue;
    std::string key = path.substr(root_slash.size());
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    if (BaseName(key).starts_with(kTempPrefix)) continue;
    out.push_back({std::move(key), info.size()});
  }
  std::sort(out.begin(), out.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

arrow::Result<std::vector<arrow::fs::FileInfo>> ObjectStore::ListSelector(
    const arrow::fs::FileSelector& selector) const {
  // A local walk fails when a file it has seen is renamed away before it is stat'ed, which is
  // what every concurrent atomic write does to its temp file. Such a walk is simply repeated.
  auto infos = fs_->GetFileInfo(selector);
  for (int retry = 0; local_ && !infos.ok() && infos.status().IsIOError() && retry < 8; ++retry) {
    infos = fs_->GetFileInfo(selector);
  }
  return infos;
}

arrow::Result<bool> ObjectStore::Exists(std::string_view key) const {
  ARROW_RETURN_NOT_OK(ValidateKey(key));
  auto info = fs_->GetFileInfo(PathOf(key));
  if (!info.ok()) {
    return AddContext(info.status(),
                      "checking object '" + std::string(key) + "' in " + display_url_);
  }
  return info->type() == arrow::fs::FileType::File;
}

arrow::Status ObjectStore::Delete(std::string_view key) {
  ARROW_ASSIGN_OR_RAISE(bool exists, Exists(key));
  if (!exists) return arrow::Status::OK();
  SLUICE_RETURN_NOT_OK_CTX(fs_->DeleteFile(PathOf(key)),
                           "deleting object '" + std::string(key) + "' in " + display_url_);
  return arrow::Status::OK();
}

arrow::Result<int64_t> ObjectStore::RemoveTemps(std::string_view prefix, std::string_view contains,
                                                bool only_abandoned) {
  if (!local_) return 0;
  const size_t slash = prefix.rfind('/');
  const std::string dir = slash == std::string_view::npos ? root_ : PathOf(prefix.substr(0, slash));
  arrow::fs::FileSelector selector;
  selector.base_dir = dir;
  selector.recursive = true;
  selector.allow_not_found = true;
  ARROW_ASSIGN_OR_RAISE(auto infos, ListSelector(selector));
  const std::string root_slash = root_ == "/" ? "/" : root_ + "/";
  const auto now = std::chrono::system_clock::now();
  int64_t removed = 0;
  for (const arrow::fs::FileInfo& info : infos) {
    if (info.type() != arrow::fs::FileType::File) continue;
    const std::string& path = info.path();
    if (path.compare(0, root_slash.size(), root_slash) != 0) continue;
    const std::string key = path.substr(root_slash.size());
    const std::string base(BaseName(key));
    if (!base.starts_with(kTempPrefix)) continue;
    // The temp file stands for the key it was to become: compare that with the prefix.
    const std::string target =
        key.substr(0, key.size() - base.size()) + base.substr(kTempPrefix.size());
    if (target.compare(0, prefix.size(), prefix) != 0) continue;
    if (base.find(contains) == std::string::npos) continue;
    if (only_abandoned) {
      // ".<pid>.<counter>.<random>" ends the name (UniqueTempName).
      int pid = 0;
      const size_t random_dot = base.rfind('.');
      const size_t counter_dot =
          random_dot == std::string::npos ? std::string::npos : base.rfind('.', random_dot - 1);
      const size_t pid_dot = counter_dot == std::string::npos || counter_dot == 0
                                 ? std::string::npos
                                 : base.rfind('.', counter_dot - 1);
      if (pid_dot != std::string::npos) {
        pid = std::atoi(base.substr(pid_dot + 1, counter_dot - pid_dot - 1).c_str());
      }
      const bool writer_alive = pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
      const bool old = now - info.mtime() > std::chrono::hours(24);
      if (writer_alive && !old) continue;
    }
    if (fs_->DeleteFile(path).ok()) ++removed;
  }
  return removed;
}

arrow::Status FinalizeFilesystems() {
  // A plan stopped early (by a LIMIT or an error) can leave reads of files it no longer needs
  // on Arrow's pools. They must end before the S3 SDK goes, and before exit drops the queued
  // continuations that would release what those reads opened (LeakSanitizer saw the footers).
  auto* io = dynamic_cast<arrow::internal::ThreadPool*>(arrow::io::default_io_context().executor());
  for (int round = 0; round < 2; ++round) {  // a CPU task may start another read
    if (io != nullptr) io->WaitForIdle();
    arrow::internal::GetCpuThreadPool()->WaitForIdle();
  }
  arrow::fs::EnsureFinalized();  // every loaded filesystem's finalizer: the S3 SDK's
  return arrow::Status::OK();
}

}  // namespace sluice::storage
