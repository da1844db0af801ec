#include "sql/interval_text.h"

#include <arrow/status.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

namespace sluice::sql {
namespace {

constexpr int64_t kMicrosPerSecond = 1'000'000;
constexpr int64_t kMicrosPerDay = 86'400 * kMicrosPerSecond;

// A unit's field and size in it: months for years and months, days for weeks and days,
// microseconds for the rest.
struct Unit {
  enum Field { kMonths, kDays, kMicros } field;
  int64_t size;
};

std::optional<Unit> UnitNamed(std::string name) {
  static const std::map<std::string, Unit> kUnits = {
      {"millennium", {Unit::kMonths, 12000}},
      {"millennia", {Unit::kMonths, 12000}},
      {"century", {Unit::kMonths, 1200}},
      {"centuries", {Unit::kMonths, 1200}},
      {"decade", {Unit::kMonths, 120}},
      {"decades", {Unit::kMonths, 120}},
      {"year", {Unit::kMonths, 12}},
      {"years", {Unit::kMonths, 12}},
      {"yr", {Unit::kMonths, 12}},
      {"yrs", {Unit::kMonths, 12}},
      {"y", {Unit::kMonths, 12}},
      {"month", {Unit::kMonths, 1}},
      {"months", {Unit::kMonths, 1}},
      {"mon", {Unit::kMonths, 1}},
      {"mons", {Unit::kMonths, 1}},
      {"week", {Unit::kDays, 7}},
      {"weeks", {Unit::kDays, 7}},
      {"w", {Unit::kDays, 7}},
      {"day", {Unit::kDays, 1}},
      {"days", {Unit::kDays, 1}},
      {"d", {Unit::kDays, 1}},
      {"hour", {Unit::kMicros, 3600 * kMicrosPerSecond}},
      {"hours", {Unit::kMicros, 3600 * kMicrosPerSecond}},
      {"hr", {Unit::kMicros, 3600 * kMicrosPerSecond}},
      {"hrs", {Unit::kMicros, 3600 * kMicrosPerSecond}},
      {"h", {Unit::kMicros, 3600 * kMicrosPerSecond}},
      {"minute", {Unit::kMicros, 60 * kMicrosPerSecond}},
      {"minutes", {Unit::kMicros, 60 * kMicrosPerSecond}},
      {"min", {Unit::kMicros, 60 * kMicrosPerSecond}},
      {"mins", {Unit::kMicros, 60 * kMicrosPerSecond}},
      {"m", {Unit::kMicros, 60 * kMicrosPerSecond}},
      {"second", {Unit::kMicros, kMicrosPerSecond}},
      {"seconds", {Unit::kMicros, kMicrosPerSecond}},
      {"sec", {Unit::kMicros, kMicrosPerSecond}},
      {"secs", {Unit::kMicros, kMicrosPerSecond}},
      {"s", {Unit::kMicros, kMicrosPerSecond}},
      {"millisecond", {Unit::kMicros, 1000}},
      {"milliseconds", {Unit::kMicros, 1000}},
      {"ms", {Unit::kMicros, 1000}},
      {"msec", {Unit::kMicros, 1000}},
      {"msecs", {Unit::kMicros, 1000}},
      {"microsecond", {Unit::kMicros, 1}},
      {"microseconds", {Unit::kMicros, 1}},
      {"us", {Unit::kMicros, 1}},
      {"usec", {Unit::kMicros, 1}},
      {"usecs", {Unit::kMicros, 1}},
  };
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = kUnits.find(name);
  if (it == kUnits.end()) return std::nullopt;
  return it->second;
}

// The text split at spaces.
std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!word.empty()) out.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

// `[+-]digits[.digits]` as a whole part and a fraction; nothing where `s` is not one.
std::optional<std::pair<int64_t, double>> Number(const std::string& s) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  const size_t digits = i;
  int64_t whole = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    if (whole > (std::numeric_limits<int64_t>::max() - 9) / 10) return std::nullopt;
    whole = whole * 10 + (s[i++] - '0');
  }
  double fraction = 0;
  bool has_fraction_digits = false;
  if (i < s.size() && s[i] == '.') {
    double scale = 0.1;
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      fraction += (s[i] - '0') * scale;
      scale /= 10;
      has_fraction_digits = true;
    }
  }
  if (i != s.size() || (i == digits) ||
      (i == digits + 1 && s[digits] == '.' && !has_fraction_digits)) {
    return std::nullopt;
  }
  return std::pair{negative ? -whole : whole, negative ? -fraction : fraction};
}

// `[+-]hh:mm[:ss[.ffffff]]` in microseconds (`mm:ss` for two parts where `minutes_first`);
// nothing where `s` is not one. `*out_of_range`: a minute or second past 59.
std::optional<int64_t> TimeOfDay(const std::string& s, bool minutes_first, bool* out_of_range) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  std::vector<std::string> parts;
  std::string part;
  for (; i < s.size(); ++i) {
    if (s[i] == ':') {
      parts.push_back(std::move(part));
      part.clear();
    } else {
      part += s[i];
    }
  }
  parts.push_back(std::move(part));
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  int64_t micros = 0;
  const int64_t sizes[] = {3600 * kMicrosPerSecond, 60 * kMicrosPerSecond, kMicrosPerSecond};
  const size_t first = minutes_first && parts.size() == 2 ? 1 : 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].empty() || parts[p][0] == '+' || parts[p][0] == '-') return std::nullopt;
    auto n = Number(parts[p]);
    // Only the seconds may have a fraction.
    if (!n || (p + 1 < parts.size() && n->second != 0)) return std::nullopt;
    if (p > 0 && n->first > 59) *out_of_range = true;
    const int64_t size = sizes[first + p];
    micros += n->first * size + static_cast<int64_t>(std::llround(n->second * size));
  }
  return negative ? -micros : micros;
}

}  // namespace

IntervalFields IntervalFieldsOfMask(int64_t mask) {
  // From the largest field to the smallest, with PostgreSQL's bit for each.
  static const std::pair<const char*, int64_t> kBits[] = {
      {"year", 4}, {"month", 2}, {"day", 8}, {"hour", 1024}, {"minute", 2048}, {"second", 4096}};
  IntervalFields out;
  int64_t known = 0;
  for (const auto& [name, bit] : kBits) {
    known |= bit;
    if (!(mask & bit)) continue;
    if (out.largest.empty()) out.largest = name;
    out.smallest = name;
  }
  if (mask & ~known) return {};  // the full range (0x7FFF) and anything else: no qualifier
  return out;
}

arrow::Result<Interval> ParseInterval(const std::string& text, const IntervalFields& fields) {
  const auto invalid = [&] {
    return arrow::Status::Invalid("invalid input syntax for type interval: \"", text, "\"");
  };
  const auto out_of_range = [&] {
    return arrow::Status::Invalid("interval field value out of range: \"", text, "\"");
  };
  // Each unit once, as PostgreSQL: a unit by its field and size (a time sets hour, minute and
  // second).
  std::set<std::pair<int, int64_t>> seen;
  const auto once = [&](int field, int64_t size) { return seen.insert({field, size}).second; };
  std::vector<std::string> words = Words(text);
  bool ago = false;
  if (!words.empty() && (words.back() == "ago" || words.back() == "AGO")) {
    ago = true;
    words.pop_back();
  }
  // A sign written apart from its number ("- 1 day").
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == "-" || words[i] == "+") {
      words[i] += words[i + 1];
      words.erase(words.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
  }
  if (words.empty()) return invalid();
  // Fields summed in wide types, checked at the end.
  int64_t months = 0, days = 0;
  double micros = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i].find(':') != std::string::npos) {
      bool range_error = false;
      auto t = TimeOfDay(words[i], fields.largest == "minute" && fields.smallest == "second",
                         &range_error);
      if (!t) return invalid();
      if (range_error) return out_of_range();
      for (int64_t size : {3600 * kMicrosPerSecond, 60 * kMicrosPerSecond, kMicrosPerSecond}) {
        if (!once(Unit::kMicros, size)) return invalid();
      }
      micros += static_cast<double>(*t);
      continue;
    }
    // A number and its unit, written apart ("2 hours") or together ("2hours").
    std::string number = words[i], unit_name;
    size_t split = 0;
    while (split < number.size() &&
           (std::isdigit(static_cast<unsigned char>(number[split])) || number[split] == '.' ||
            (split == 0 && (number[split] == '+' || number[split] == '-')))) {
      ++split;
    }
    if (split < number.size()) {
      unit_name = number.substr(split);
      number.resize(split);
    } else if (i + 1 < words.size() && UnitNamed(words[i + 1])) {
      unit_name = words[++i];
    } else if (i + 1 == words.size()) {
      unit_name = fields.smallest.empty() ? "second" : fields.smallest;
    } else {
      return invalid();
    }
    auto n = Number(number);
    auto unit = UnitNamed(unit_name);
    if (!n || !unit || !once(unit->field, unit->size)) return invalid();
    switch (unit->field) {
      case Unit::kMonths:
        months += n->first * unit->size;
        if (unit->size > 1) {
          // A fraction of a year is whole months, rounded.
          months +=
              static_cast<int64_t>(std::nearbyint(n->second * static_cast<double>(unit->size)));
        } else {
          // A fraction of a month is 30-day months' days, and their fraction time.
          const double part = n->second * 30;
          days += static_cast<int64_t>(part);
          micros += (part - std::trunc(part)) * static_cast<double>(kMicrosPerDay);
        }
        break;
      case Unit::kDays: {
        const double whole_days = static_cast<double>(n->first * unit->size);
        const double part = n->second * static_cast<double>(unit->size);
        days += static_cast<int64_t>(whole_days) + static_cast<int64_t>(part);
        micros += (part - std::trunc(part)) * static_cast<double>(kMicrosPerDay);
        break;
      }
      case Unit::kMicros:
        micros += static_cast<double>(n->first) * static_cast<double>(unit->size) +
                  n->second * static_cast<double>(unit->size);
        break;
    }
  }
  // A qualifier drops what is below its smallest field (toward zero).
  const std::string& smallest = fields.smallest;
  if (smallest == "year") months = months / 12 * 12;
  if (smallest == "year" || smallest == "month") days = 0;
  if (smallest == "year" || smallest == "month" || smallest == "day") micros = 0;
  if (smallest == "hour" || smallest == "minute") {
    const double size = smallest == "hour" ? 3600.0 * kMicrosPerSecond : 60.0 * kMicrosPerSecond;
    micros = std::trunc(micros / size) * size;
  }
  const double rounded = std::nearbyint(micros);
  if (std::abs(months) > std::numeric_limits<int32_t>::max() ||
      std::abs(days) > std::numeric_limits<int32_t>::max() || std::abs(rounded) > 9.2e18) {
    return out_of_range();
  }
  Interval out{static_cast<int32_t>(months), static_cast<int32_t>(days),
               static_cast<int64_t>(rounded)};
  if (ago) out = {-out.months, -out.days, -out.micros};
  return out;
}

}  // namespace sluice::sql
