// The local Ed25519 signing identity (libsodium) that signs published pipeline specs.
//
// Stored under SLUICE_HOME/keys: signing.key holds the secret key as hex (mode 0600),
// signing.pub the public key. A publisher's id is "ed25519:" followed by its public key in hex,
// so an id can never silently point at another key.
#pragma once

#include <arrow/result.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::catalog {

class SigningIdentity {
 public:
  static constexpr size_t kPublicKeySize = 32;
  static constexpr size_t kSecretKeySize = 64;
  static constexpr size_t kSignatureSize = 64;

  /// A fresh random key pair.
  static arrow::Result<SigningIdentity> Generate();
  /// Reads keys_dir/signing.key. A missing identity says how to create one.
  static arrow::Result<SigningIdentity> Load(const std::string& keys_dir);
  /// Writes keys_dir/signing.key (0600) and signing.pub. Refuses to replace an existing key
  /// unless `force`.
  arrow::Status Save(const std::string& keys_dir, bool force) const;

  std::string publisher_id() const;
  const std::array<uint8_t, kPublicKeySize>& public_key() const { return public_key_; }

  /// A detached signature of `message`.
  std::vector<uint8_t> Sign(const std::vector<uint8_t>& message) const;

 private:
  std::array<uint8_t, kPublicKeySize> public_key_{};
  std::array<uint8_t, kSecretKeySize> secret_key_{};
};

/// The publisher id of a public key.
std::string PublisherIdOf(const std::vector<uint8_t>& public_key);

/// True when `signature` is a valid signature of `message` by `public_key`.
bool VerifySignature(const std::vector<uint8_t>& public_key, const std::vector<uint8_t>& message,
                     const std::vector<uint8_t>& signature);

}  // namespace sluice::catalog
