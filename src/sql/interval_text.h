// Interval literals as PostgreSQL reads them (`interval '1 year 2 months'`, `'3 days 04:05:06'`,
// `'90 minutes'`, `interval '2' hour`): the three fields PostgreSQL keeps, which date and
// timestamp arithmetic apply in order (months, then days, then the time).
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <string>

namespace sluice::sql {

/// An interval: months, days and microseconds, each signed, kept apart because a month and a day
/// have no fixed length.
struct Interval {
  int32_t months = 0;
  int32_t days = 0;
  int64_t micros = 0;
};

/// The interval `text` spells: `<number> <unit>` pairs (year, month, week, day, hour, minute,
/// second, millisecond, microsecond, their plurals and PostgreSQL's abbreviations), an
/// `[-]hh:mm[:ss[.ffffff]]` time, and a trailing `ago`, which negates. A fraction carries into
/// the smaller fields as in PostgreSQL (a year's into whole months, a month's into 30-day days,
/// a day's into time). A number
/// without a unit takes `default_unit` (from `interval '2' hour`), else seconds, as PostgreSQL.
/// Errors are PostgreSQL's "invalid input syntax for type interval".
arrow::Result<Interval> ParseInterval(const std::string& text,
                                      const std::string& default_unit = "");

}  // namespace sluice::sql
