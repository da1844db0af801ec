#include <arrow/io/file.h>
#include <arrow/io/stdio.h>

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "common/config.h"
#include "common/status.h"
#include "storage/object_store.h"

namespace sluice::cli {

namespace {

arrow::Result<std::shared_ptr<storage::ObjectStore>> OpenConfiguredStore() {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  return storage::ObjectStore::Open(config.store_url);
}

arrow::Status List(const std::string& prefix) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenConfiguredStore());
  ARROW_ASSIGN_OR_RAISE(auto objects, store->List(prefix));
  for (const auto& o : objects) std::printf("%12" PRId64 "  %s\n", o.size, o.key.c_str());
  return arrow::Status::OK();
}

arrow::Status Get(const std::string& key, const std::string& out_path) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenConfiguredStore());
  ARROW_ASSIGN_OR_RAISE(auto data, store->Get(key));
  if (out_path.empty() || out_path == "-") {
    if (std::fwrite(data->data(), 1, data->size(), stdout) != static_cast<size_t>(data->size())) {
      return arrow::Status::IOError("writing object '", key, "' to standard output failed");
    }
    std::fflush(stdout);
    return arrow::Status::OK();
  }
  const std::string ctx = "writing object '" + key + "' to '" + out_path + "'";
  auto file = arrow::io::FileOutputStream::Open(out_path);
  if (!file.ok()) return AddContext(file.status(), ctx);
  SLUICE_RETURN_NOT_OK_CTX((*file)->Write(data), ctx);
  SLUICE_RETURN_NOT_OK_CTX((*file)->Close(), ctx);
  return arrow::Status::OK();
}

arrow::Status Put(const std::string& key, const std::string& in_path) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenConfiguredStore());
  std::shared_ptr<arrow::io::InputStream> in;
  if (in_path == "-") {
    in = std::make_shared<arrow::io::StdinStream>();
  } else {
    auto file = arrow::io::ReadableFile::Open(in_path);
    if (!file.ok()) return AddContext(file.status(), "cannot read '" + in_path + "'");
    in = *file;
  }
  ARROW_ASSIGN_OR_RAISE(auto pending, store->Create(key));
  // Stream in chunks so large files never sit in memory whole; the object appears only on Commit.
  while (true) {
    auto chunk = in->Read(1 << 20);
    if (!chunk.ok()) return AddContext(chunk.status(), "reading '" + in_path + "'");
    if ((*chunk)->size() == 0) break;
    SLUICE_RETURN_NOT_OK_CTX(pending->stream()->Write(*chunk), "writing object '" + key + "'");
  }
  return pending->Commit();
}

arrow::Status Remove(const std::string& key) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenConfiguredStore());
  return store->Delete(key);
}

}  // namespace

void AddStoreCommand(CLI::App& app, Action& action) {
  auto* store = app.add_subcommand("store", "Inspect and edit the object store (SLUICE_STORE)");
  store->require_subcommand(1);

  auto prefix = std::make_shared<std::string>();
  auto* ls = store->add_subcommand("ls", "List objects under a key prefix, sorted by key");
  ls->add_option("prefix", *prefix, "Key prefix; empty lists everything");
  ls->callback([&action, prefix] { action = [prefix] { return List(*prefix); }; });

  auto key = std::make_shared<std::string>();
  auto path = std::make_shared<std::string>();
  auto* get = store->add_subcommand("get", "Write an object to a file or standard output");
  get->add_option("key", *key, "Object key")->required();
  get->add_option("-o,--output", *path, "Output file; default standard output");
  get->callback([&action, key, path] { action = [key, path] { return Get(*key, *path); }; });

  auto* put = store->add_subcommand("put", "Store a file atomically under a key");
  put->add_option("key", *key, "Object key")->required();
  put->add_option("file", *path, "File to store; '-' reads standard input")->required();
  put->callback([&action, key, path] { action = [key, path] { return Put(*key, *path); }; });

  auto* rm = store->add_subcommand("rm", "Delete an object (a missing one is not an error)");
  rm->add_option("key", *key, "Object key")->required();
  rm->callback([&action, key] { action = [key] { return Remove(*key); }; });
}

}  // namespace sluice::cli
