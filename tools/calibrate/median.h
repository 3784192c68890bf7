// The statistics of repeated timed runs that the calibration program writes: the median, and the
// spread ((max - min) / median) that each measurement row carries. Plain C++, tested without a
// GPU.
//
//   auto [median, spread] = MedianSpread({1.2e-3, 1.0e-3, 1.1e-3});  // 1.1e-3, 0.18
#pragma once

#include <utility>
#include <vector>

namespace parasim::calibrate {

// The median of `v` (the upper one of an even count); 0 when `v` is empty.
double Median(std::vector<double> v);

// The median of `v` and its spread, (max - min) / median (0 when the median is not positive);
// {0, 0} when `v` is empty.
std::pair<double, double> MedianSpread(std::vector<double> v);

}  // namespace parasim::calibrate
