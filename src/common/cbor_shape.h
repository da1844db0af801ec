// A check of untrusted CBOR before a recursive decoder sees it.
//
// nlohmann's from_cbor recurses once per nesting level (200,000 nested arrays overflow the
// stack) and reserves whatever a header declares. Every reader of foreign CBOR (plan bytes,
// pipeline specs from the registry) passes the bytes here first.
#pragma once

#include <arrow/status.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice {

/// Checks, without recursion, that `size` bytes hold one CBOR item whose arrays, maps and
/// indefinite-length strings nest at most `max_depth` deep, and whose declared lengths fit in the
/// bytes that remain. `what` starts every message ("plan", "pipeline spec '...'").
arrow::Status CheckCborShape(const uint8_t* data, size_t size, int max_depth,
                             std::string_view what);

}  // namespace sluice
