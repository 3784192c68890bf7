#include "strategies/serving_series.h"

#include <algorithm>

namespace parasim {

void ThinPeaks(std::vector<KvPoint>* series) {
  std::vector<KvPoint>& v = *series;
  size_t out = 0;
  for (size_t i = 0; i < v.size(); i += 2) {
    KvPoint p = v[i];
    if (i + 1 < v.size()) p.used = std::max(p.used, v[i + 1].used);
    v[out++] = p;
  }
  v.resize(out);
}

void ThinCumulative(std::vector<std::pair<int64_t, double>>* series) {
  std::vector<std::pair<int64_t, double>>& v = *series;
  if (v.size() < 3) return;
  const std::pair<int64_t, double> last = v.back();
  size_t out = 0;
  for (size_t i = 0; i + 1 < v.size(); i += 2) v[out++] = v[i];
  if (v[out - 1] != last) v[out++] = last;
  v.resize(out);
}

}  // namespace parasim
