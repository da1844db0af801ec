#include "exec/key_groups.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <vector>

namespace sluice::exec {
namespace {

// A key of the form `near` + m * 2^32 (the same low 32 bits, past int32) that starts at the same
// slot as `near`, or none among the first million m: its lookup meets `near`'s slot first.
std::optional<int64_t> TwinAtTheSameSlot(const KeyGroups& groups, int64_t near) {
  for (int64_t m = 1; m < 1'000'000; ++m) {
    const int64_t twin = near + m * (int64_t{1} << 32);
    if (groups.StartSlot(twin) == groups.StartSlot(near)) return twin;
  }
  return std::nullopt;
}

// The slots keep only a key's low 32 bits while every key fits an int32: the first key past
// int32, met at the slot of a key with the same low bits, is a group of its own, and so are the
// keys after it.
TEST(KeyGroups, AKeyPastInt32IsNotTheKeyWithItsLowBits) {
  for (const int64_t near : {int64_t{5}, int64_t{-7}, int64_t{std::numeric_limits<int32_t>::max()},
                             int64_t{std::numeric_limits<int32_t>::min()}}) {
    KeyGroups groups;
    const uint32_t first = groups.Find(near);
    auto twin = TwinAtTheSameSlot(groups, near);
    ASSERT_TRUE(twin.has_value()) << near;
    const uint32_t second = groups.Find(*twin);
    EXPECT_NE(second, first) << near << " and " << *twin;
    EXPECT_EQ(groups.Find(near), first);
    EXPECT_EQ(groups.Find(*twin), second);
    EXPECT_EQ(groups.Lookup(*twin), second);
    EXPECT_EQ(groups.key(second), *twin);
    EXPECT_EQ(groups.size(), 2u);
  }
}

// Random keys, narrow and wide, many sharing low bits, through several growths: each key keeps
// one group, as a std::map says.
TEST(KeyGroups, GivesEachKeyOneGroupThroughGrowth) {
  std::mt19937_64 rng(3);
  KeyGroups groups;
  std::map<int64_t, uint32_t> want;
  for (int i = 0; i < 200'000; ++i) {
    const int64_t low = static_cast<int64_t>(rng() % 5000) - 2500;
    // Narrow keys first, then some past int32 with the same low bits.
    const int64_t key = i < 50'000 || rng() % 2 == 0
                            ? low
                            : low + static_cast<int64_t>(rng() % 3 + 1) * (int64_t{1} << 32);
    const uint32_t id = groups.Find(key);
    auto [it, added] = want.emplace(key, id);
    ASSERT_EQ(it->second, id) << key;
    if (added) {
      ASSERT_EQ(id + 1, groups.size());
    }
  }
  for (const auto& [key, id] : want) EXPECT_EQ(groups.Lookup(key), id) << key;
  EXPECT_EQ(groups.Lookup(int64_t{1} << 40), KeyGroups::kNone);
}

}  // namespace
}  // namespace sluice::exec
