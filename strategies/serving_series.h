// The serving replay's time series, kept within a bound: one point an engine iteration grows
// without end (a 100,000-request trace at 2 a second is 6.3M iterations, about 57 bytes each),
// so past kMaxSeriesPoints a series keeps every other point.
//
//   std::vector<KvPoint> kv;             // KV use, one point an iteration
//   ThinPeaks(&kv);                      // pairs merged, each keeping the higher use
//   std::vector<std::pair<int64_t, double>> made;  // (time, tokens by then), cumulative
//   ThinCumulative(&made);               // every other point dropped, the last kept
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace parasim {

// 2^20 points a series (16 MiB each): a replay of more iterations thins it. The replays of the
// validation files stay below it (their longest, MLPerf's 45,060-request Server runs, holds a
// few hundred thousand iterations), so their figures do not move.
inline constexpr size_t kMaxSeriesPoints = size_t{1} << 20;

// The replayed replicas' KV cache in use, as a share of their blocks, at a time.
struct KvPoint {
  double time_s = 0;
  double used = 0;
};

// Halves a series of KV use: each pair of points becomes the first's time and the higher use
// (the series is only ever read as the highest use over spans).
void ThinPeaks(std::vector<KvPoint>* series);

// Halves a cumulative series of (time, total by then): the points at odd places go, the last
// point stays; read by interpolation between points, it then errs by at most what one gap
// between kept points adds.
void ThinCumulative(std::vector<std::pair<int64_t, double>>* series);

}  // namespace parasim
