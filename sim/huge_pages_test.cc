// HugePageAllocator: large storage aligned to huge pages, small storage as usual, and vectors
// that grow, copy and shrink through it keep their contents.
#include "sim/huge_pages.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>

namespace parasim::sim {
namespace {

TEST_CASE("storage of a huge page or more is aligned to huge pages") {
  HugePageVector<int64_t> large(kHugePageBytes / sizeof(int64_t) + 1, 7);
  CHECK(reinterpret_cast<uintptr_t>(large.data()) % kHugePageBytes == 0);
  CHECK(large.front() == 7);
  CHECK(large.back() == 7);
  CHECK(StorageBytes(large) == 2 * kHugePageBytes);  // the tail of the second page counts
  HugePageVector<int64_t> small(100, 3);
  CHECK(StorageBytes(small) == 100 * sizeof(int64_t));
  CHECK(small.size() == 100);
  CHECK(small[99] == 3);
}

TEST_CASE("vectors grow across the threshold and keep their contents") {
  HugePageVector<uint32_t> v;
  const size_t n = 3 * kHugePageBytes / sizeof(uint32_t);  // three huge pages
  for (size_t i = 0; i < n; ++i) v.push_back(static_cast<uint32_t>(i));
  CHECK(reinterpret_cast<uintptr_t>(v.data()) % kHugePageBytes == 0);
  uint64_t sum = std::accumulate(v.begin(), v.end(), uint64_t{0});
  CHECK(sum == uint64_t{n} * (n - 1) / 2);
  HugePageVector<uint32_t> copy = v;
  CHECK(copy == v);
  copy.resize(10);
  copy.shrink_to_fit();
  CHECK(copy.size() == 10);
  CHECK(copy[9] == 9);
}

}  // namespace
}  // namespace parasim::sim
