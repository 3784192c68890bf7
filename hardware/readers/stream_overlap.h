// Overlap of communication with compute, measured on a trace's streams: the time communication
// kernels run while some compute kernel runs on another stream, and the communication time left
// exposed (no compute beside it). Pure interval arithmetic on [start, end) nanosecond intervals,
// kept apart from the trace so it is tested alone.
//
//   OverlapFacts o = MeasureOverlap(comm_intervals, compute_intervals);
//   // o.comm_ns = o.overlapped_ns + o.exposed_ns
#pragma once

#include <cstdint>
#include <vector>

namespace parasim {

struct Interval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Sorted, with overlapping or touching intervals merged and empty ones dropped.
std::vector<Interval> MergeIntervals(std::vector<Interval> v);
// Total length of a merged list.
int64_t CoveredLength(const std::vector<Interval>& merged);
// Length of the intersection of two merged lists (one linear pass).
int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b);

struct OverlapFacts {
  int64_t comm_ns = 0;        // union of the communication kernels
  int64_t compute_ns = 0;     // union of the compute kernels
  int64_t overlapped_ns = 0;  // communication while compute runs
  int64_t exposed_ns = 0;     // communication with no compute beside it
  // overlapped / comm: the share of communication hidden (0 when there is none).
  double hidden_fraction() const {
    return comm_ns > 0 ? static_cast<double>(overlapped_ns) / static_cast<double>(comm_ns) : 0;
  }
};

OverlapFacts MeasureOverlap(std::vector<Interval> comm, std::vector<Interval> compute);

}  // namespace parasim
