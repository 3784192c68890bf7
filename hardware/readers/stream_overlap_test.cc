#include "hardware/readers/stream_overlap.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("merge: overlapping and touching intervals join, empty ones go") {
  const std::vector<Interval> m = MergeIntervals({{5, 9}, {0, 2}, {2, 3}, {7, 12}, {20, 20}});
  REQUIRE(m.size() == 2);
  CHECK(m[0].start_ns == 0);
  CHECK(m[0].end_ns == 3);
  CHECK(m[1].start_ns == 5);
  CHECK(m[1].end_ns == 12);
  CHECK(CoveredLength(m) == 10);
}

TEST_CASE("intersection of two merged lists") {
  const std::vector<Interval> a = {{0, 10}, {20, 30}};
  const std::vector<Interval> b = {{5, 25}, {28, 40}};
  CHECK(IntersectionLength(a, b) == 5 + 5 + 2);
  CHECK(IntersectionLength(a, {}) == 0);
}

// The DeepSeek-style fixture by hand (tests/fixtures/traces/deepseek-dualpipe-h800.json, in us
// from the first kernel): DeepEP on one stream beside GEMM, attention and the rest on another.
TEST_CASE("communication beside compute on other streams: hidden and exposed") {
  const std::vector<Interval> comm = {{0, 40}, {60, 360}, {380, 530}, {560, 580}};
  const std::vector<Interval> compute = {{10, 40},   {50, 250},  {260, 380}, {400, 420},
                                         {430, 445}, {450, 510}, {520, 525}, {540, 548}};
  const OverlapFacts o = MeasureOverlap(comm, compute);
  CHECK(o.comm_ns == 510);
  CHECK(o.overlapped_ns == 30 + 290 + 100);
  CHECK(o.exposed_ns == 90);
  CHECK(o.compute_ns == 30 + 200 + 120 + 20 + 15 + 60 + 5 + 8);
  CHECK(o.hidden_fraction() == doctest::Approx(420.0 / 510));
  CHECK(MeasureOverlap({}, compute).hidden_fraction() == 0);
}

}  // namespace
}  // namespace parasim
