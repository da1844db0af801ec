#include "artifact/blake3_digest.h"

#include <blake3.h>

#include <cstring>

#include "common/hex.h"

namespace sluice::artifact {

struct Blake3Hasher::State {
  blake3_hasher hasher;
};

arrow::Result<Digest> Digest::FromHex(std::string_view hex, std::string_view what) {
  if (hex.size() != 2 * kSize) {
    return arrow::Status::Invalid(what, " '", hex, "' is not a BLAKE3 digest: expected ", 2 * kSize,
                                  " hex characters, got ", hex.size());
  }
  ARROW_ASSIGN_OR_RAISE(std::vector<uint8_t> raw, HexDecode(hex, what));
  std::array<uint8_t, kSize> bytes;
  std::memcpy(bytes.data(), raw.data(), kSize);
  return Digest(bytes);
}

std::string Digest::ToHex() const { return HexEncode(bytes_.data(), bytes_.size()); }

Blake3Hasher::Blake3Hasher() : state_(std::make_unique<State>()) {
  blake3_hasher_init(&state_->hasher);
}

Blake3Hasher::~Blake3Hasher() = default;

void Blake3Hasher::Update(const void* data, size_t size) {
  blake3_hasher_update(&state_->hasher, data, size);
}

Digest Blake3Hasher::Finalize() const {
  std::array<uint8_t, Digest::kSize> out;
  blake3_hasher_finalize(&state_->hasher, out.data(), out.size());
  return Digest(out);
}

Digest Blake3(const void* data, size_t size) {
  Blake3Hasher hasher;
  hasher.Update(data, size);
  return hasher.Finalize();
}

Digest Blake3(std::string_view data) { return Blake3(data.data(), data.size()); }

Digest Blake3(const arrow::Buffer& buffer) {
  return Blake3(buffer.data(), static_cast<size_t>(buffer.size()));
}

arrow::Result<Digest> Blake3Stream(arrow::io::InputStream* stream, int64_t chunk_size) {
  Blake3Hasher hasher;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> chunk, stream->Read(chunk_size));
    if (chunk->size() == 0) break;
    hasher.Update(chunk->data(), static_cast<size_t>(chunk->size()));
  }
  return hasher.Finalize();
}

}  // namespace sluice::artifact
