#include "catalog/signing.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/hex.h"

namespace sluice::catalog {

namespace {

namespace fs = std::filesystem;

arrow::Status EnsureSodium() {
  if (sodium_init() < 0) return arrow::Status::IOError("libsodium failed to initialise");
  return arrow::Status::OK();
}

// Writes `text` to `path` with `mode`, through a temp file renamed into place, so a crash never
// leaves a half-written key.
arrow::Status WriteFileAtomically(const fs::path& path, const std::string& text, mode_t mode) {
  const fs::path temp = path.string() + ".tmp." + std::to_string(getpid());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return arrow::Status::IOError("cannot write '", temp.string(), "': ", strerror(errno));
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  fchmod(fd, mode) == 0 && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(temp.c_str(), path.c_str()) != 0) {
    unlink(temp.c_str());
    return arrow::Status::IOError("cannot write '", path.string(), "': ", strerror(errno));
  }
  return arrow::Status::OK();
}

}  // namespace

std::string PublisherIdOf(const std::vector<uint8_t>& public_key) {
  return "ed25519:" + HexEncode(public_key.data(), public_key.size());
}

arrow::Result<SigningIdentity> SigningIdentity::Generate() {
  ARROW_RETURN_NOT_OK(EnsureSodium());
  SigningIdentity id;
  crypto_sign_keypair(id.public_key_.data(), id.secret_key_.data());
  return id;
}

arrow::Status SigningIdentity::Save(const std::string& keys_dir, bool force) const {
  const fs::path dir(keys_dir);
  const fs::path key = dir / "signing.key";
  if (fs::exists(key) && !force) {
    return arrow::Status::Invalid("a signing key already exists at '", key.string(),
                                  "'; pass --force to replace it (anything signed with the old "
                                  "key stays verifiable only while its publisher is registered)");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return arrow::Status::IOError("cannot create '", dir.string(), "': ", ec.message());
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  ARROW_RETURN_NOT_OK(
      WriteFileAtomically(key, HexEncode(secret_key_.data(), secret_key_.size()) + "\n", 0600));
  return WriteFileAtomically(dir / "signing.pub",
                             HexEncode(public_key_.data(), public_key_.size()) + "\n", 0644);
}

arrow::Result<SigningIdentity> SigningIdentity::Load(const std::string& keys_dir) {
  ARROW_RETURN_NOT_OK(EnsureSodium());
  const fs::path key = fs::path(keys_dir) / "signing.key";
  std::ifstream in(key);
  if (!in) {
    return arrow::Status::Invalid("no signing identity at '", key.string(),
                                  "': create one with `sluice auth keygen`");
  }
  std::string hex;
  in >> hex;
  ARROW_ASSIGN_OR_RAISE(auto bytes, HexDecode(hex, "signing key in " + key.string()));
  if (bytes.size() != kSecretKeySize) {
    return arrow::Status::Invalid("signing key '", key.string(), "' has ", bytes.size(),
                                  " bytes; expected ", kSecretKeySize);
  }
  SigningIdentity id;
  std::memcpy(id.secret_key_.data(), bytes.data(), kSecretKeySize);
  crypto_sign_ed25519_sk_to_pk(id.public_key_.data(), id.secret_key_.data());
  return id;
}

std::string SigningIdentity::publisher_id() const {
  return PublisherIdOf(std::vector<uint8_t>(public_key_.begin(), public_key_.end()));
}

std::vector<uint8_t> SigningIdentity::Sign(const std::vector<uint8_t>& message) const {
  std::vector<uint8_t> signature(kSignatureSize);
  crypto_sign_detached(signature.data(), nullptr, message.data(), message.size(),
                       secret_key_.data());
  return signature;
}

bool VerifySignature(const std::vector<uint8_t>& public_key, const std::vector<uint8_t>& message,
                     const std::vector<uint8_t>& signature) {
  if (EnsureSodium().ok() == false) return false;
  if (public_key.size() != SigningIdentity::kPublicKeySize ||
      signature.size() != SigningIdentity::kSignatureSize) {
    return false;
  }
  return crypto_sign_verify_detached(signature.data(), message.data(), message.size(),
                                     public_key.data()) == 0;
}

}  // namespace sluice::catalog
