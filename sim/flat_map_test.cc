#include "sim/flat_map.h"

#include <doctest/doctest.h>

#include <map>
#include <random>

namespace parasim::sim {
namespace {

// A hash that sends many keys to one slot, so that probing and growth are exercised.
struct Clashing {
  size_t operator()(int64_t k) const { return static_cast<size_t>(k % 7); }
};

TEST_CASE("flat map: agrees with std::map over random insertions, clashing hashes included") {
  FlatMap<int64_t, int64_t, Clashing> clash;
  FlatMap<int64_t, int64_t, std::hash<int64_t>> plain;
  std::map<int64_t, int64_t> truth;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) {
    const int64_t k = static_cast<int64_t>(rng() % 1500);
    const auto [v, in] = clash.Emplace(k, i);
    const auto [w, in2] = plain.Emplace(k, i);
    const bool fresh = truth.emplace(k, i).second;
    CHECK(in == fresh);
    CHECK(in2 == fresh);
    CHECK(*v == truth.at(k));  // a key already there keeps its first value
    CHECK(*w == truth.at(k));
  }
  CHECK(clash.size() == truth.size());
  CHECK(plain.size() == truth.size());
  for (int64_t k = -10; k < 1600; ++k) {
    const int64_t* v = clash.Find(k);
    const auto it = truth.find(k);
    REQUIRE((v != nullptr) == (it != truth.end()));
    if (v != nullptr) CHECK(*v == it->second);
    const int64_t* w = plain.Find(k);
    REQUIRE((w != nullptr) == (it != truth.end()));
    if (w != nullptr) CHECK(*w == it->second);
  }
  clash.clear();
  CHECK(clash.size() == 0);
  CHECK(clash.Find(3) == nullptr);
  CHECK(clash.Emplace(3, 9).second);
  CHECK(*clash.Find(3) == 9);
  FlatMap<int64_t, int64_t, Clashing> empty;
  CHECK(empty.Find(3) == nullptr);
  CHECK(empty.size() == 0);
}

}  // namespace
}  // namespace parasim::sim
