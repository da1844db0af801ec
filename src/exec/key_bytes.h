// The bytes of a key column's values, the common ground of hash partitioning and dedup: two
// rows have the same key exactly when these bytes are equal.
#pragma once

#include <arrow/array.h>
#include <arrow/status.h>

#include <cstdint>
#include <functional>

namespace sluice::exec {

/// Calls fn(row, data, size) for each non-null value of `key`, and fn(row, nullptr, 0) for
/// nulls. Supports binary, string, fixed-size binary and 32/64-bit integers (integers as their
/// 64-bit value, so an int32 and an int64 column agree).
arrow::Status ForEachKey(const arrow::Array& key,
                         const std::function<void(int64_t, const uint8_t*, size_t)>& fn);

}  // namespace sluice::exec
