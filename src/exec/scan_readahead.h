// How many batches a scan reads ahead of its consumers: enough to keep both decoding and the
// plan above busy, few enough that a query's memory stays a few batches per scan.
#pragma once

#include <arrow/type_fwd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::exec {

/// Decoded bytes of batches ahead up to which a scan reads four batches rather than two.
inline constexpr int64_t kScanAheadBytes = int64_t{8} << 20;

/// Rows a scan keeps ahead however small its batches: about one row group of the files common
/// writers make (tpchgen ~113K rows, DuckDB 122,880).
inline constexpr int64_t kScanAheadRows = int64_t{128} << 10;

/// The most batches a scan reads ahead.
inline constexpr int kMostBatchesAhead = 8;

/// The batches a scan of `columns` of `schema`, in batches of `batch_rows`, reads ahead (Arrow's
/// ScanOptions::batch_readahead): four where that is at most kScanAheadBytes, two otherwise,
/// and in either case at least kScanAheadRows (up to kMostBatchesAhead batches) unless rows are
/// so wide that those rows would take more than four times kScanAheadBytes.
int ScanReadahead(const arrow::Schema& schema, const std::vector<std::string>& columns,
                  int64_t batch_rows);

}  // namespace sluice::exec
