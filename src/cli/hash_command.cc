#include <arrow/io/file.h>
#include <arrow/io/stdio.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "artifact/blake3_digest.h"
#include "cli/command.h"
#include "common/status.h"

namespace sluice::cli {

namespace {

arrow::Result<artifact::Digest> HashOne(const std::string& path) {
  if (path == "-") {
    arrow::io::StdinStream in;
    return artifact::Blake3Stream(&in);
  }
  auto file = arrow::io::ReadableFile::Open(path);
  if (!file.ok()) return AddContext(file.status(), "cannot hash '" + path + "'");
  auto digest = artifact::Blake3Stream(file->get());
  if (!digest.ok()) return AddContext(digest.status(), "cannot hash '" + path + "'");
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
          if (paths.size() > 1) std::cerr << "sluice: " << digest.status().ToString() << "\n";
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
