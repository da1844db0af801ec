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

/// An interval type's field qualifier (`INTERVAL '2' DAY TO HOUR`): its largest and smallest
/// fields, each "year", "month", "day", "hour", "minute" or "second"; empty for none.
struct IntervalFields {
  std::string largest;
  std::string smallest;
};

/// The qualifier of PostgreSQL's interval typmod bit mask (MONTH 2, YEAR 4, DAY 8, HOUR 1024,
/// MINUTE 2048, SECOND 4096; several for X TO Y); none for another mask.
IntervalFields IntervalFieldsOfMask(int64_t mask);

/// The interval `text` spells: `<number> <unit>` pairs (year, month, week, day, hour, minute,
/// second, millisecond, microsecond, their plurals and PostgreSQL's abbreviations), an
/// `[-]hh:mm[:ss[.ffffff]]` time, and a trailing `ago`, which negates. A fraction carries into
/// the smaller fields as in PostgreSQL (a year's into whole months, a month's into 30-day days,
/// a day's into time). A unit may appear once. With a qualifier, as PostgreSQL: a number without
/// a unit is of its smallest field (else seconds), `mm:ss` is read for MINUTE TO SECOND, and what
/// is below the smallest field is dropped (`INTERVAL '1.5' HOUR` is an hour). Errors are
/// PostgreSQL's "invalid input syntax for type interval" and "interval field value out of
/// range".
arrow::Result<Interval> ParseInterval(const std::string& text, const IntervalFields& fields = {});

}  // namespace sluice::sql
