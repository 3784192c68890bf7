#include "hardware/readers/stream_overlap.h"

#include <algorithm>

namespace parasim {

std::vector<Interval> MergeIntervals(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.end_ns < b.end_ns);
  });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end_ns <= i.start_ns) continue;
    if (!out.empty() && i.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t CoveredLength(const std::vector<Interval>& merged) {
  int64_t total = 0;
  for (const Interval& i : merged) total += i.end_ns - i.start_ns;
  return total;
}

int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].start_ns, b[j].start_ns);
    const int64_t hi = std::min(a[i].end_ns, b[j].end_ns);
    if (hi > lo) total += hi - lo;
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

OverlapFacts MeasureOverlap(std::vector<Interval> comm, std::vector<Interval> compute) {
  const std::vector<Interval> c = MergeIntervals(std::move(comm));
  const std::vector<Interval> k = MergeIntervals(std::move(compute));
  OverlapFacts o;
  o.comm_ns = CoveredLength(c);
  o.compute_ns = CoveredLength(k);
  o.overlapped_ns = IntersectionLength(c, k);
  o.exposed_ns = o.comm_ns - o.overlapped_ns;
  return o;
}

}  // namespace parasim
