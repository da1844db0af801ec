#include "exec/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace sluice::exec {
namespace {

// A field of /proc/self/smaps for the mapping that holds `p` (AnonHugePages in KiB, or
// THPeligible: 1 where the mapping may have huge pages), or -1.
int64_t SmapsField(const void* p, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(' ') < line.find(':')) {
      inside = lo <= at && at < hi;
      continue;
    }
    int64_t value = 0;
    if (inside && line.rfind(field + ":", 0) == 0 &&
        std::sscanf(line.c_str() + field.size() + 1, "%ld", &value) == 1) {
      return value;
    }
  }
  return -1;
}

bool ThpAvailable() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s.find("[always]") != std::string::npos || s.find("[madvise]") != std::string::npos;
}

TEST(HugePageAllocator, LargeTablesAreAlignedToHugePages) {
  for (size_t bytes : {kHugePageBytes, kHugePageBytes + 1, 5 * kHugePageBytes + 12345}) {
    void* p = AllocateTable(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u) << bytes;
    std::memset(p, 0x5a, bytes);  // all of it usable
    FreeTable(p);
  }
  for (size_t bytes : {size_t{0}, size_t{1}, kHugePageBytes - 1}) {
    void* p = AllocateTable(bytes);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5a, bytes);
    FreeTable(p);
  }
  FreeTable(nullptr);
}

TEST(HugePageAllocator, AVectorGrowsOntoHugePages) {
  std::vector<uint32_t, HugePageAllocator<uint32_t>> slots;
  for (uint32_t i = 0; i < 4 * (kHugePageBytes / sizeof(uint32_t)); ++i) slots.push_back(i);
  for (uint32_t i = 0; i < slots.size(); i += 4099) ASSERT_EQ(slots[i], i);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(slots.data()) % kHugePageBytes, 0u);
  if (!ThpAvailable()) GTEST_SKIP() << "no transparent huge pages on this kernel";
  // The mapping is advised onto huge pages; whether the kernel found free ones is its own
  // affair (a fragmented machine may give none).
  EXPECT_EQ(SmapsField(slots.data(), "THPeligible"), 1);
  std::printf("AnonHugePages of the table's mapping: %ld KiB\n",
              static_cast<long>(SmapsField(slots.data(), "AnonHugePages")));
}

}  // namespace
}  // namespace sluice::exec
