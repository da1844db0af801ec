#include "dist/driver_tag.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "common/proc_stat.h"

namespace sluice::dist {

namespace {

std::string HostHash() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  uint32_t h = 2166136261u;  // FNV-1a: a short, stable name for the host
  for (const char* p = host; *p != '\0'; ++p) {
    h ^= static_cast<uint8_t>(*p);
    h *= 16777619u;
  }
  char out[9];
  std::snprintf(out, sizeof(out), "%08x", h);
  return out;
}

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

const std::string& DriverTag() {
  static const std::string tag = [] {
    const pid_t pid = getpid();
    auto stat = ReadProcStat(pid);
    return HostHash() + "." + std::to_string(pid) + "." +
           std::to_string(stat.has_value() ? stat->start_ticks : 0);
  }();
  return tag;
}

TagOwner OwnerOf(std::string_view tag) {
  const size_t first = tag.find('.');
  const size_t second = first == std::string_view::npos ? first : tag.find('.', first + 1);
  if (second == std::string_view::npos) return TagOwner::kMalformed;
  int pid = 0;
  uint64_t start = 0;
  if (!ParseNumber(tag.substr(first + 1, second - first - 1), &pid) ||
      !ParseNumber(tag.substr(second + 1), &start)) {
    return TagOwner::kMalformed;
  }
  if (tag.substr(0, first) != HostHash()) return TagOwner::kElsewhere;
  auto stat = ReadProcStat(pid);
  const bool alive = stat.has_value() && stat->state != 'Z' && stat->start_ticks == start;
  return alive ? TagOwner::kAlive : TagOwner::kGone;
}

}  // namespace sluice::dist
