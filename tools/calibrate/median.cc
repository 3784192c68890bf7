#include "tools/calibrate/median.h"

#include <algorithm>

namespace parasim::calibrate {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::pair<double, double> MedianSpread(std::vector<double> v) {
  if (v.empty()) return {0.0, 0.0};
  std::sort(v.begin(), v.end());
  const double med = v[v.size() / 2];
  return {med, med > 0 ? (v.back() - v.front()) / med : 0.0};
}

}  // namespace parasim::calibrate
