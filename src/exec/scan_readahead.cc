#include "exec/scan_readahead.h"

#include <arrow/type.h>

#include <algorithm>

#include "plan/row_width.h"

namespace sluice::exec {

// Memory is what bounds a query here, not read latency (Arrow's default of 16 held ~250 MiB
// more in TPC-H Q1 at SF 1 for no speedup). Arrow's Parquet reader decodes whole row groups
// until batch_readahead x batch_size rows are in flight, so fewer rows than a row group ahead
// decode one row group at a time while the other core waits:
// - narrow rows read four batches, two row groups at once (TPC-H SF 1 Q5, Q7, Q18 and Q21
//   12-20 % faster than with two);
// - 32K-row batches (a plan with a large hash build) read at least kScanAheadRows: Q9's six
//   lineitem columns (2.25 MB a batch) with two kept its two cores ~65 % busy while probing,
//   and ran 12-18 % slower than with four at about the same peak memory at SF 1; at SF 10
//   four cost ~100 MB more (1.56 against 1.45 GB), the probe side queuing more while Acero
//   builds the orders table.
int ScanReadahead(const arrow::Schema& schema, const std::vector<std::string>& columns,
                  int64_t batch_rows) {
  arrow::FieldVector fields;
  for (const auto& name : columns) {
    if (auto field = schema.GetFieldByName(name)) fields.push_back(std::move(field));
  }
  const int64_t rows = std::max<int64_t>(batch_rows, 1);
  const double row_bytes = plan::GuessRowBytes(fields);
  const auto bytes = [](int64_t n) { return static_cast<double>(n); };
  int ahead = 4 * bytes(rows) * row_bytes <= bytes(kScanAheadBytes) ? 4 : 2;
  const int64_t for_rows = (kScanAheadRows + rows - 1) / rows;
  if (for_rows > ahead && bytes(kScanAheadRows) * row_bytes <= 4 * bytes(kScanAheadBytes)) {
    ahead = static_cast<int>(std::min<int64_t>(for_rows, kMostBatchesAhead));
  }
  return ahead;
}

}  // namespace sluice::exec
