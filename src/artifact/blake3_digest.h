// BLAKE3 content digests: the address of every artifact and the checksum of every output file.
//
// The hashing itself is the official BLAKE3 C implementation (with runtime SIMD dispatch),
// compiled from the sources Debian ships; this header only gives it a typed C++ face.
#pragma once

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace sluice::artifact {

/// A 32-byte BLAKE3 digest.
class Digest {
 public:
  static constexpr size_t kSize = 32;

  Digest() : bytes_{} {}
  explicit Digest(const std::array<uint8_t, kSize>& bytes) : bytes_(bytes) {}

  /// Parses 64 hex characters. `what` names the value in errors, e.g. "pin_artifact_hash".
  static arrow::Result<Digest> FromHex(std::string_view hex, std::string_view what = "digest");

  /// Lower-case hex, as b3sum prints it.
  std::string ToHex() const;
  const std::array<uint8_t, kSize>& bytes() const { return bytes_; }

  bool operator==(const Digest& other) const = default;

 private:
  std::array<uint8_t, kSize> bytes_;
};

/// Incremental hashing. Not thread-safe: one hasher belongs to one thread at a time.
class Blake3Hasher {
 public:
  Blake3Hasher();
  ~Blake3Hasher();
  Blake3Hasher(const Blake3Hasher&) = delete;
  Blake3Hasher& operator=(const Blake3Hasher&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  /// The digest of everything so far. The hasher stays usable for more Updates.
  Digest Finalize() const;

 private:
  // Opaque so that blake3.h stays out of our headers; the C state is ~1.9 KiB.
  struct State;
  std::unique_ptr<State> state_;
};

/// One-shot hashing of bytes in memory.
Digest Blake3(const void* data, size_t size);
Digest Blake3(std::string_view data);
Digest Blake3(const arrow::Buffer& buffer);

/// Hashes a stream to its end, reading `chunk_size` bytes at a time.
arrow::Result<Digest> Blake3Stream(arrow::io::InputStream* stream, int64_t chunk_size = 1 << 20);

}  // namespace sluice::artifact
