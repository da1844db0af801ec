// Arrow 26 keeps most compute kernels in libarrow_compute, whose function registry must be
// initialised explicitly before sort_indices and friends exist. Every exec entry point that
// calls compute functions goes through this; it is cheap after the first call.
#pragma once

#include <arrow/status.h>

#include <cstdint>

namespace sluice::plan {

/// Registers Arrow's compute kernels once per process, and sluice's own functions beside them
/// (by name, as plan bytes call them). Thread-safe.
arrow::Status EnsureComputeInitialized();

/// at_most_one_row(count int64, where utf8) -> true, or the error "more than one row returned
/// by a subquery used as an expression (where)": SQL's check on a scalar subquery's rows.
inline constexpr const char* kAtMostOneRowFunction = "sluice_at_most_one_row";

/// Days since 1970-01-01 moved by `months` calendar months: the same day of the month, or the
/// month's last day where it has fewer (PostgreSQL's date + interval 'n months').
int64_t DaysPlusMonths(int64_t days, int64_t months);

/// add_months(date date32, months int64) -> date32: PostgreSQL's date + interval 'n months'
/// (the month's last day where it has fewer days).
inline constexpr const char* kAddMonthsFunction = "sluice_add_months";

}  // namespace sluice::plan
