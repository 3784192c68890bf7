// An insertion-only hash map for the memo tables of the lowering and the sweep's enumeration:
// open addressing over a power-of-two table of (index, hash) slots, the entries kept densely in
// insertion order. std::unordered_map allocates a node per entry; a screening of the 16K-GPU
// sweep asks for ~30 million memo entries, and the enumeration looks up 1.2 million grid points
// in tables of 100 thousand, where the nodes' allocation and pointer chasing took most of the
// time.
//
//   FlatMap<Key, Value, KeyHash> memo;
//   auto [v, inserted] = memo.Emplace(key, value);   // v: the value now stored under key
//   if (const Value* w = memo.Find(key)) ...
//   memo.clear();
//
// Pointers into the map last until the next insertion (the entries are a std::vector).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace parasim::sim {

// A hash of a fixed list of whole numbers (FNV-1a's offset basis and prime, a number at a time),
// for keys such as std::array<int64_t, N>; FlatMap mixes its bits further.
struct WholeNumbersHash {
  template <class Array>
  size_t operator()(const Array& a) const {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (auto v : a) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ULL;
    return static_cast<size_t>(h);
  }
};

template <class K, class V, class H>
class FlatMap {
 public:
  V* Find(const K& k) {
    if (slots_.empty()) return nullptr;
    const size_t h = Mixed(k);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot s = slots_[i];
      if (s.index == 0) return nullptr;
      if (s.hash == static_cast<uint32_t>(h) && entries_[s.index - 1].first == k) {
        return &entries_[s.index - 1].second;
      }
    }
  }
  // The value under `k`, and whether it was inserted now (else the one there is kept).
  std::pair<V*, bool> Emplace(const K& k, V v) {
    if (2 * (entries_.size() + 1) > slots_.size()) Grow();
    const size_t h = Mixed(k);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot s = slots_[i];
      if (s.index == 0) {
        entries_.emplace_back(k, std::move(v));
        slots_[i] = {static_cast<uint32_t>(entries_.size()), static_cast<uint32_t>(h)};
        return {&entries_.back().second, true};
      }
      if (s.hash == static_cast<uint32_t>(h) && entries_[s.index - 1].first == k) {
        return {&entries_[s.index - 1].second, false};
      }
    }
  }
  size_t size() const { return entries_.size(); }
  // The bytes its storage holds.
  size_t storage_bytes() const {
    return entries_.capacity() * sizeof(std::pair<K, V>) + slots_.capacity() * sizeof(Slot);
  }
  // Empties the map, keeping its storage.
  void clear() {
    entries_.clear();
    std::fill(slots_.begin(), slots_.end(), Slot{0, 0});
  }

 private:
  // The key's hash, its bits mixed (MurmurHash3's 64-bit finaliser): the table takes the low
  // bits, where a hash of pointers or of small integers times odd numbers varies least.
  static size_t Mixed(const K& k) {
    uint64_t h = static_cast<uint64_t>(H()(k));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return static_cast<size_t>(h);
  }
  struct Slot {
    uint32_t index;  // into entries_, plus one; 0: empty
    uint32_t hash;   // the hash's low bits, compared before the keys
  };
  // Doubles the table (at least 16 slots), keeping it at most half full.
  void Grow() {
    slots_.assign(slots_.empty() ? 16 : 2 * slots_.size(), Slot{0, 0});
    mask_ = slots_.size() - 1;
    for (size_t k = 0; k < entries_.size(); ++k) {
      const size_t h = Mixed(entries_[k].first);
      size_t i = h & mask_;
      while (slots_[i].index != 0) i = (i + 1) & mask_;
      slots_[i] = {static_cast<uint32_t>(k + 1), static_cast<uint32_t>(h)};
    }
  }
  std::vector<std::pair<K, V>> entries_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace parasim::sim
