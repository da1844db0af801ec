// Lower-case hexadecimal encoding, used for digests, keys and signatures in text form.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

/// Encodes bytes as lower-case hex, two characters per byte.
std::string HexEncode(const uint8_t* data, size_t size);

/// Decodes hex (either case). `what` names the value in errors, e.g. "artifact digest".
/// Fails with Invalid on an odd length or a non-hex character, naming its position.
arrow::Result<std::vector<uint8_t>> HexDecode(std::string_view hex, std::string_view what);

}  // namespace sluice
