#include "catalog/trust.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/hex.h"

namespace sluice::catalog {

namespace {

namespace fs = std::filesystem;

constexpr char kTrustedFile[] = "trusted_publishers";
constexpr char kPrefix[] = "ed25519:";

std::string Trim(std::string s) {
  const size_t b = s.find_first_not_of(" \t\r");
  const size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

arrow::Result<std::string> TrustedPublishers::ParsePublisherId(const std::string& key) {
  std::string hex = Trim(key);
  if (hex.starts_with(kPrefix)) hex = hex.substr(sizeof(kPrefix) - 1);
  ARROW_ASSIGN_OR_RAISE(auto bytes, HexDecode(hex, "public key"));
  if (bytes.size() != 32) {
    return arrow::Status::Invalid("public key '", key,
                                  "' is not an Ed25519 key: expected 64 hex characters, got ",
                                  hex.size());
  }
  return kPrefix + HexEncode(bytes.data(), bytes.size());
}

arrow::Result<TrustedPublishers> TrustedPublishers::Load(const std::string& keys_dir) {
  TrustedPublishers trusted;
  const fs::path file = fs::path(keys_dir) / kTrustedFile;
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = Trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    auto id = ParsePublisherId(line);
    if (!id.ok()) {
      return arrow::Status::Invalid(file.string(), " line ", n, ": ", id.status().message());
    }
    trusted.ids_.insert(*id);
  }
  std::ifstream pub(fs::path(keys_dir) / "signing.pub");
  if (std::getline(pub, line)) {
    auto id = ParsePublisherId(line);
    if (id.ok()) trusted.ids_.insert(*id);
  }
  return trusted;
}

arrow::Status TrustedPublishers::Add(const std::string& keys_dir, const std::string& publisher_id) {
  ARROW_ASSIGN_OR_RAISE(std::string id, ParsePublisherId(publisher_id));
  const fs::path file = fs::path(keys_dir) / kTrustedFile;
  std::string text;
  {
    std::ifstream in(file);
    std::stringstream all;
    all << in.rdbuf();
    text = all.str();
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (Trim(line.substr(0, line.find('#'))) == id) return arrow::Status::OK();
  }
  if (!text.empty() && text.back() != '\n') text += "\n";
  text += id + "\n";
  std::error_code ec;
  fs::create_directories(keys_dir, ec);
  const fs::path temp = file.string() + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::trunc);
    out << text;
    if (!out) return arrow::Status::IOError("cannot write ", temp.string());
  }
  fs::rename(temp, file, ec);
  if (ec) {
    fs::remove(temp, ec);
    return arrow::Status::IOError("cannot write ", file.string(), ": ", ec.message());
  }
  return arrow::Status::OK();
}

}  // namespace sluice::catalog
