// The order a window spec's rows are computed in, and where each row's partition and peer group
// begin and end. A window needs each partition's rows contiguous and in ORDER BY order, but not
// the partitions in any order (results go back to the input's order). So PARTITION BY keys
// become group ids, ORDER BY keys order-preserving integer codes, and one stable radix sort of
// the packed codes replaces Arrow's comparison sort of the whole batch, which on half a million
// rows took most of a window's time.
#pragma once

#include <arrow/compute/ordering.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::exec {

/// Per row of the sorted input: its partition and its peer group (rows equal on the ORDER BY
/// keys too), each as [begin, end).
struct WindowLayout {
  std::vector<int64_t> part_begin, part_end, peer_begin, peer_end;
};

/// From marks of the rows (of the sorted input) that start a new partition and a new peer group.
WindowLayout LayoutFromMarks(const std::vector<uint8_t>& new_part,
                             const std::vector<uint8_t>& new_peer);

struct WindowOrder {
  /// Row i of the window's order is row indices[i] of the input.
  std::shared_ptr<arrow::UInt64Array> indices;
  WindowLayout layout;
};

/// Per row, a number whose unsigned order is the value's order (a NULL slot's is arbitrary), for
/// numbers, dates, times and booleans; std::nullopt for other types, a NaN, or a decimal outside
/// 64 bits.
std::optional<std::vector<uint64_t>> OrderOrdinals(const arrow::Array& a);

/// The order by codes, or std::nullopt where the keys do not fit one: an ORDER BY key that is
/// not a number, date, time or boolean, a NaN, a decimal outside 64 bits, or more than 64 bits
/// of codes all told. Rows equal on every key keep their input order, as Arrow's stable sort
/// keeps them.
arrow::Result<std::optional<WindowOrder>> OrderByCodes(
    const arrow::RecordBatch& batch, const std::vector<std::string>& partition_keys,
    const std::vector<arrow::compute::SortKey>& order_keys);

}  // namespace sluice::exec
