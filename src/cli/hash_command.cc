#include <arrow/io/file.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "artifact/blake3_digest.h"
#include "cli/command.h"
#include "common/status.h"

namespace sluice::cli {

namespace {

// Hashes whatever a descriptor yields until EOF: pipes, terminals, /dev/stdin. Arrow's file
// classes need lseek, which these do not have.
arrow::Result<artifact::Digest> HashDescriptor(int fd, const std::string& name) {
  artifact::Blake3Hasher hasher;
  std::vector<uint8_t> buffer(1 << 20);
  while (true) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return arrow::Status::IOError("cannot hash '", name, "': ", std::strerror(errno));
    if (n == 0) break;
    hasher.Update(buffer.data(), static_cast<size_t>(n));
  }
  return hasher.Finalize();
}

arrow::Result<artifact::Digest> HashOne(const std::string& path) {
  if (path == "-") return HashDescriptor(STDIN_FILENO, path);
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return arrow::Status::IOError("cannot hash '", path, "': ", std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return arrow::Status::IOError("cannot hash '", path, "': a directory");
  if (S_ISREG(st.st_mode)) {
    // Memory-map regular files: hashing then reads the page cache directly, with no copy.
    const std::string ctx = "cannot hash '" + path + "'";
    auto mapped = arrow::io::MemoryMappedFile::Open(path, arrow::io::FileMode::READ);
    if (!mapped.ok()) return AddContext(mapped.status(), ctx);
    auto size = (*mapped)->GetSize();
    if (!size.ok()) return AddContext(size.status(), ctx);
    auto data = (*mapped)->ReadAt(0, *size);
    if (!data.ok()) return AddContext(data.status(), ctx);
    return artifact::Blake3(**data);
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return arrow::Status::IOError("cannot hash '", path, "': ", std::strerror(errno));
  auto digest = HashDescriptor(fd, path);
  close(fd);
  return digest;
}

}  // namespace

void AddHashCommand(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("hash", "Print the BLAKE3 digest of files, as b3sum does");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("files", *files, "Files to hash; '-' or none reads standard input");
  cmd->callback([&action, files] {
    action = [files]() -> arrow::Status {
      std::vector<std::string> paths = files->empty() ? std::vector<std::string>{"-"} : *files;
      // Like b3sum: hash every file, report each failure, and fail at the end if any did.
      arrow::Status first_error;
      for (const std::string& path : paths) {
        auto digest = HashOne(path);
        if (!digest.ok()) {
          if (first_error.ok()) first_error = digest.status();
          if (paths.size() > 1)
            std::cerr << "sluice: error: " << digest.status().ToString() << "\n";
          continue;
        }
        std::cout << digest->ToHex() << "  " << path << "\n";
      }
      std::cout.flush();
      if (!first_error.ok() && paths.size() > 1) {
        return arrow::Status::IOError("some files could not be hashed");
      }
      return first_error;
    };
  });
}

}  // namespace sluice::cli
