#include "strategies/serving_series.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("a thinned KV series keeps every span's highest use") {
  std::vector<KvPoint> kv = {{0, 0.1}, {1, 0.5}, {2, 0.3}, {3, 0.2}, {4, 0.9}};
  ThinPeaks(&kv);
  REQUIRE(kv.size() == 3);
  CHECK(kv[0].time_s == 0);
  CHECK(kv[0].used == 0.5);
  CHECK(kv[1].time_s == 2);
  CHECK(kv[1].used == 0.3);
  CHECK(kv[2].used == 0.9);
  std::vector<KvPoint> one = {{7, 0.4}};
  ThinPeaks(&one);
  REQUIRE(one.size() == 1);
  CHECK(one[0].used == 0.4);
}

TEST_CASE("a thinned cumulative series keeps its first and last points and stays monotone") {
  std::vector<std::pair<int64_t, double>> made;
  for (int64_t i = 0; i < 10; ++i) made.push_back({i * 10, static_cast<double>(i * i)});
  ThinCumulative(&made);
  REQUIRE(made.size() == 6);  // 0, 20, 40, 60, 80 and the last, 90
  CHECK(made.front() == std::make_pair(int64_t{0}, 0.0));
  CHECK(made.back() == std::make_pair(int64_t{90}, 81.0));
  for (size_t i = 1; i < made.size(); ++i) {
    CHECK(made[i].first > made[i - 1].first);
    CHECK(made[i].second >= made[i - 1].second);
  }
  // An odd count keeps its last point without doubling it.
  std::vector<std::pair<int64_t, double>> odd = {{0, 0}, {1, 1}, {2, 2}};
  ThinCumulative(&odd);
  CHECK(odd == std::vector<std::pair<int64_t, double>>{{0, 0}, {2, 2}});
}

}  // namespace
}  // namespace parasim
