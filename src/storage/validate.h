// The checks of untrusted bytes that every reader makes, made cheaper where they cost the most:
// UTF-8 validation of text.
//
// IsValidUtf8 decides exactly what arrow::util::ValidateUTF8 decides (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), with simdjson's validator (Debian's
// libsimdjson-dev), which checks 32 or 64 bytes at a time with the widest SIMD this CPU has where
// Arrow's goes byte by byte.
//
// ValidateFull returns exactly what RecordBatch::ValidateFull returns. Arrow checks each string
// value on its own with a byte-at-a-time validator; here the structure is checked by Arrow with
// the strings seen as binary (the same layout and checks, without UTF-8), and then each string
// array's value bytes are checked as one text, with every non-empty value starting and ending on
// a character boundary, which holds exactly when each value is valid UTF-8 by itself. Anything
// that does not pass this way (bad data, null slots over bytes that are not text, types this
// does not look into) is checked again by Arrow itself, whose answer and message are returned.
//
// Thread-safety: stateless; call from any thread.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/status.h>

#include <cstdint>
#include <string_view>

namespace sluice::storage {

bool IsValidUtf8(const uint8_t* data, int64_t size);
inline bool IsValidUtf8(std::string_view text) {
  return IsValidUtf8(reinterpret_cast<const uint8_t*>(text.data()),
                     static_cast<int64_t>(text.size()));
}

/// RecordBatch::ValidateFull, faster on valid string data.
arrow::Status ValidateFull(const arrow::RecordBatch& batch);

}  // namespace sluice::storage
