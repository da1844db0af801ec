// The hash table of the integer-key aggregate (exec/int_key_aggregate.h): int64 keys to dense
// group ids, in a flat table of its own, since a lookup per row is the aggregate's main cost.
#pragma once

#include <arrow/util/bit_util.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "exec/huge_page_allocator.h"

namespace sluice::exec {

/// Keys to dense group ids: open addressing over a power-of-two table of slots, the keys
/// themselves in id order. A key is one int64: the key column's value, or two 32-bit key
/// columns' values side by side. A slot is 0 (empty) or id + 1 beside the key's low 32 bits:
/// while every key in the table fits an int32 (order and customer keys do), those bits are the
/// key, and a hit costs the slot's cache miss alone, not a second one on keys_ (TPC-H Q13: 11 %
/// of its time in lookups of 150K customer keys). Keys with a NULL part are groups of their own,
/// found through a small map by which parts are NULL (bit i: key column i) and the others'
/// values, and are in no slot.
class KeyGroups {
 public:
  uint32_t size() const { return static_cast<uint32_t>(keys_.size()); }

  // Makes group 0, in an empty table, the group of rows that a filter marked as dropped
  // (exec/kept_rows.h): no key finds it, and it is left out of the result.
  void ReserveDropped() {
    if (keys_.empty()) Add(0, kDroppedMark);
  }

  /// The group of `key`, added if new.
  uint32_t Find(int64_t key) {
    if ((keys_.size() + 1) * 2 > slots_.size()) Grow();
    size_t i = Slot(key);
    for (;;) {
      const uint64_t s = slots_[i];
      if (s == 0) {
        const uint32_t id = Add(key, 0);
        slots_[i] = SlotValue(id, key);
        wide_ = wide_ || !FitsInt32(key);
        return id;
      }
      if (Holds(s, key)) return IdOf(s);
      i = (i + 1) & mask_;
    }
  }

  static constexpr uint32_t kNone = ~0u;

  // The group of `key`, or kNone, adding nothing: safe from several threads while none adds.
  uint32_t Lookup(int64_t key) const {
    if (slots_.empty()) return kNone;
    size_t i = Slot(key);
    for (;;) {
      const uint64_t s = slots_[i];
      if (s == 0) return kNone;
      if (Holds(s, key)) return IdOf(s);
      i = (i + 1) & mask_;
    }
  }

  // As Lookup, for a key with NULL parts.
  uint32_t LookupWithNulls(uint8_t nulls, int64_t key) const {
    auto it = with_nulls_.find({nulls, key});
    return it == with_nulls_.end() ? kNone : it->second;
  }

  // The slot a lookup of `key` starts at; keys of one start slot are probed in turn.
  size_t StartSlot(int64_t key) const { return Slot(key); }

  // Asks for the slot a later Find(key) starts at. A table larger than the cache makes each
  // new key a cache miss; asking some rows ahead overlaps those misses.
  void Prefetch(int64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Slot(key)], 1);
  }

  // The group of a key with NULL parts (`nulls` != 0; those parts of `key` are 0).
  uint32_t FindWithNulls(uint8_t nulls, int64_t key) {
    // Runs of NULL keys (a single NULL key is one group) skip the map.
    if (last_with_nulls_ >= 0 && nulls_[last_with_nulls_] == nulls &&
        keys_[last_with_nulls_] == key) {
      return static_cast<uint32_t>(last_with_nulls_);
    }
    auto [it, added] = with_nulls_.try_emplace({nulls, key}, 0);
    if (added) it->second = Add(key, nulls);
    last_with_nulls_ = it->second;
    return it->second;
  }

  int64_t key(uint32_t group) const { return keys_[group]; }
  // Which parts of the group's key are NULL (bit i: key column i).
  uint8_t nulls(uint32_t group) const { return nulls_[group]; }
  bool dropped(uint32_t group) const { return nulls_[group] == kDroppedMark; }

 private:
  // How far ahead of its re-insertion a key's slot is prefetched as the table grows.
  static constexpr uint32_t kGrowPrefetch = 64;

  // The nulls_ of ReserveDropped's group: no key has it (keys have at most two parts).
  static constexpr uint8_t kDroppedMark = 0x80;

  // Keys that differ only in their low 3 bits share a run of 8 slots (a cache line), the
  // run chosen by a multiplicative hash of the rest: near keys (often clustered, as order keys
  // are) cost one miss for several, and far keys still spread over the whole table.
  size_t Slot(int64_t key) const {
    const uint64_t k = static_cast<uint64_t>(key);
    const uint64_t run = ((k >> 3) * 0x9E3779B97F4A7C15ull) >> (shift_ + 3);
    return static_cast<size_t>((run << 3) | (k & 7));
  }

  static bool FitsInt32(int64_t key) { return key == static_cast<int32_t>(key); }
  static uint64_t SlotValue(uint32_t id, int64_t key) {
    return (static_cast<uint64_t>(id + 1) << 32) | static_cast<uint32_t>(key);
  }
  static uint32_t IdOf(uint64_t slot) { return static_cast<uint32_t>(slot >> 32) - 1; }

  // Whether the occupied `slot` is `key`'s: its low 32 bits are, and either every key in the
  // table fits an int32 and so does `key` (the bits are then the whole key), or keys_ says so.
  bool Holds(uint64_t slot, int64_t key) const {
    if (static_cast<uint32_t>(slot) != static_cast<uint32_t>(key)) return false;
    return (!wide_ && FitsInt32(key)) || keys_[IdOf(slot)] == key;
  }

  uint32_t Add(int64_t key, uint8_t nulls) {
    keys_.push_back(key);
    nulls_.push_back(nulls);
    return static_cast<uint32_t>(keys_.size() - 1);
  }

  void Grow() {
    const size_t capacity = slots_.empty() ? 1024 : slots_.size() * 2;
    slots_.assign(capacity, 0);
    mask_ = capacity - 1;
    shift_ = 64 - arrow::bit_util::Log2(capacity);
    const uint32_t n = static_cast<uint32_t>(keys_.size());
    for (uint32_t g = 0; g < n; ++g) {
      if (g + kGrowPrefetch < n) __builtin_prefetch(&slots_[Slot(keys_[g + kGrowPrefetch])], 1);
      if (nulls_[g] != 0) continue;
      size_t i = Slot(keys_[g]);
      while (slots_[i] != 0) i = (i + 1) & mask_;
      slots_[i] = SlotValue(g, keys_[g]);
    }
  }

  // On huge pages once large: lookups land anywhere in slots_, and keys_ is read at a hit once
  // the table holds a key past int32.
  std::vector<int64_t, HugePageAllocator<int64_t>> keys_;
  std::vector<uint8_t> nulls_;
  std::vector<uint64_t, HugePageAllocator<uint64_t>> slots_;
  bool wide_ = false;  // some key in a slot does not fit an int32
  size_t mask_ = 0;
  int shift_ = 64;
  std::map<std::pair<uint8_t, int64_t>, uint32_t> with_nulls_;
  int64_t last_with_nulls_ = -1;  // the group FindWithNulls last returned
};

}  // namespace sluice::exec
