// Interval text as PostgreSQL 15 reads it: each case's fields are PostgreSQL's.
#include "sql/interval_text.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::sql {
namespace {

constexpr int64_t kMinute = int64_t{60} * 1000000;
constexpr int64_t kHour = 60 * kMinute;

void ExpectInterval(const std::string& text, int32_t months, int32_t days, int64_t micros,
                    const std::string& unit = "", const std::string& largest = "") {
  auto iv = ParseInterval(text, {largest.empty() ? unit : largest, unit});
  ASSERT_TRUE(iv.ok()) << text << ": " << iv.status().ToString();
  EXPECT_EQ(iv->months, months) << text;
  EXPECT_EQ(iv->days, days) << text;
  EXPECT_EQ(iv->micros, micros) << text;
}

TEST(IntervalTextTest, UnitsAndTheirSpellings) {
  ExpectInterval("1 year 2 months", 14, 0, 0);
  ExpectInterval("3 days 04:05:06", 0, 3, 4 * kHour + 5 * kMinute + 6'000'000);
  ExpectInterval("90 minutes", 0, 0, 90 * kMinute);
  ExpectInterval("2 hours", 0, 0, 2 * kHour);
  ExpectInterval("2HOURS", 0, 0, 2 * kHour);
  ExpectInterval("1 week", 0, 7, 0);
  ExpectInterval("1 decade", 120, 0, 0);
  ExpectInterval("1.5 seconds", 0, 0, 1'500'000);
  ExpectInterval("250 ms", 0, 0, 250'000);
  ExpectInterval("7 us", 0, 0, 7);
  ExpectInterval("1 mon 1 d 1 h 1 min 1 s", 1, 1, kHour + 61'000'000);
}

TEST(IntervalTextTest, FractionsCarryIntoSmallerFields) {
  ExpectInterval("1.5 days", 0, 1, 12 * kHour);
  ExpectInterval("1.5 weeks", 0, 10, 12 * kHour);
  ExpectInterval("-1.5 days", 0, -1, -12 * kHour);
  ExpectInterval("0.5 hours", 0, 0, kHour / 2);
  ExpectInterval("1.5 months", 1, 15, 0);
  ExpectInterval("0.1 months", 0, 3, 0);
  ExpectInterval("1.1 years", 13, 0, 0);  // 13.2 months, rounded
  ExpectInterval("- 1 day", 0, -1, 0);
}

TEST(IntervalTextTest, SignsAgoAndBareNumbers) {
  ExpectInterval("-2 days", 0, -2, 0);
  ExpectInterval("1 day -1 hour", 0, 1, -kHour);
  ExpectInterval("-01:30", 0, 0, -90 * kMinute);
  ExpectInterval("2 days ago", 0, -2, 0);
  ExpectInterval("5", 0, 0, 5'000'000);          // seconds
  ExpectInterval("90", 0, 90, 0, "day");         // interval '90' day
  ExpectInterval("2", 0, 0, 2 * kHour, "hour");  // interval '2' hour
  ExpectInterval("1 day 2", 0, 1, 2'000'000);    // the last bare number is seconds
}

TEST(IntervalTextTest, QualifiersAsPostgreSQLReadsThem) {
  ExpectInterval("2", 0, 0, 2 * kHour, "hour", "day");           // '2' DAY TO HOUR
  ExpectInterval("3", 3, 0, 0, "month", "year");                 // '3' YEAR TO MONTH
  ExpectInterval("1:30", 0, 0, 90'000'000, "second", "minute");  // MINUTE TO SECOND: mm:ss
  ExpectInterval("1:30", 0, 0, 90 * kMinute, "minute", "hour");  // HOUR TO MINUTE: hh:mm
  ExpectInterval("1.5", 0, 0, kHour, "hour");                    // below an hour dropped
  ExpectInterval("1.5", 0, 1, 0, "day");
  ExpectInterval("1.5", 1, 0, 0, "month");
  ExpectInterval("2 hours 30 minutes", 0, 0, 2 * kHour, "hour");
  ExpectInterval("2 hours 30 minutes", 0, 0, 0, "day");
  ExpectInterval("1 year 6 months", 12, 0, 0, "year");
  EXPECT_EQ(IntervalFieldsOfMask(8 | 1024).largest, "day");
  EXPECT_EQ(IntervalFieldsOfMask(8 | 1024).smallest, "hour");
  EXPECT_EQ(IntervalFieldsOfMask(0x7FFF).smallest, "");
}

TEST(IntervalTextTest, AUnitOnceAndTimeFieldsInRange) {
  for (const char* text :
       {"1 day 1 day", "1 hour 1 hour", "1 year 1 years", "1 minute 1 min", "1 hour 10:00"}) {
    auto iv = ParseInterval(text);
    ASSERT_FALSE(iv.ok()) << text;
    EXPECT_NE(iv.status().message().find("invalid input syntax"), std::string::npos) << text;
  }
  for (const char* text : {"00:90:00", "1:60"}) {
    auto iv = ParseInterval(text);
    ASSERT_FALSE(iv.ok()) << text;
    EXPECT_EQ(iv.status().message(),
              std::string("interval field value out of range: \"") + text + "\"");
  }
  ExpectInterval("1 week 1 day", 0, 8, 0);
}

TEST(IntervalTextTest, BadTextIsPostgreSQLsError) {
  for (const char* text : {"", "day", "1 fortnight", "1 2 days", "1:2:3:4", "ago", "1..5 days",
                           "12:xx", "-", "1 day -"}) {
    auto iv = ParseInterval(text);
    ASSERT_FALSE(iv.ok()) << text;
    EXPECT_EQ(iv.status().message(),
              std::string("invalid input syntax for type interval: \"") + text + "\"")
        << text;
  }
}

}  // namespace
}  // namespace sluice::sql
