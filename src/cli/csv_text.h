// Query results as CSV text. Arrow's CSV writer formats a decimal through its string cast, which
// writes a value of more places than digits (0.000000001, or 0 of scale 9) in exponent form, as
// 1E-9 or 0E-9; PostgreSQL and DuckDB write the digits out. These lines are Arrow's otherwise:
// names and strings quoted with `"` doubled, NULL empty, other values as Arrow casts them to
// text.
#pragma once

#include <arrow/status.h>
#include <arrow/type_fwd.h>
#include <arrow/util/decimal.h>

#include <string>

namespace sluice::cli {

/// A decimal's digits with its point, never in exponent form ("0.000000001", "-12.50").
std::string PlainDecimal(arrow::Decimal128 value, int32_t scale);

/// The header line of `schema`: its names, quoted.
std::string CsvHeader(const arrow::Schema& schema);

/// Appends the CSV lines of `batch`'s rows to `out`, each ending in "\n". (A caller that writes
/// batch after batch reuses one buffer: a fresh one per batch cost page faults.)
arrow::Status AppendCsvRows(const arrow::RecordBatch& batch, std::string* out);

}  // namespace sluice::cli
