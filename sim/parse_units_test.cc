#include "sim/parse_units.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

namespace parasim {
namespace {

TEST_CASE("sizes: decimal and binary prefixes never mix") {
  CHECK(ParseBytes("80GiB")->bytes() == doctest::Approx(80.0 * 1073741824.0));
  CHECK(ParseBytes("80GB")->bytes() == doctest::Approx(80e9));
  CHECK(ParseBytes("25MiB")->bytes() == doctest::Approx(25.0 * 1048576.0));
  CHECK(ParseBytes(" 1.5 TB ")->bytes() == doctest::Approx(1.5e12));
  CHECK(ParseBytes("0B")->bytes() == 0);
}

TEST_CASE("bandwidth: lowercase b is bits") {
  CHECK(ParseBandwidth("200Gb/s")->bytes_per_second() == doctest::Approx(25e9));
  CHECK(ParseBandwidth("900GB/s")->bytes_per_second() == doctest::Approx(900e9));
  CHECK(ParseBandwidth("3.35TB/s")->bytes_per_second() == doctest::Approx(3.35e12));
  CHECK(ParseBandwidth("1PB/s")->bytes_per_second() ==
        doctest::Approx(1e15));  // SCENARIO.md's limit
  CHECK(ParseBandwidth("8Pb/s")->bytes_per_second() == doctest::Approx(1e15));
}

TEST_CASE("compute rate and time") {
  CHECK(ParseFlopRate("989TFLOP/s")->tflops() == doctest::Approx(989));
  CHECK(ParseFlopRate("989TFLOPS")->tflops() == doctest::Approx(989));
  CHECK(ParseFlopRate("1.979PFLOP/s")->tflops() == doctest::Approx(1979));
  CHECK(ParseDuration("1.5us")->picoseconds() == 1500000);
  CHECK(ParseDuration("12.3s")->seconds() == doctest::Approx(12.3));
  CHECK(ParseDuration("2min")->seconds() == doctest::Approx(120));
}

TEST_CASE("counts accept scientific notation") {
  CHECK(*ParseCount("3e11") == doctest::Approx(3e11));
  CHECK(*ParseCount("8") == 8);
  CHECK_FALSE(ParseCount("8GB").ok());
  CHECK_FALSE(ParseCount("-1").ok());
}

TEST_CASE("bad spellings get a hint") {
  auto bare = ParseBytes("80");
  REQUIRE_FALSE(bare.ok());
  CHECK(bare.status().message().find("has no unit") != std::string::npos);
  CHECK(bare.status().message().find("80GiB") != std::string::npos);
  auto bits = ParseBytes("80Gb");
  REQUIRE_FALSE(bits.ok());
  CHECK(bits.status().message().find("bits") != std::string::npos);
  CHECK_FALSE(ParseBandwidth("fast").ok());
  CHECK_FALSE(ParseFlopRate("989").ok());
  CHECK_FALSE(ParseDuration("-1s").ok());
  CHECK_FALSE(ParseBytes("1e400GB").ok());
  CHECK_FALSE(ParseDuration("1e9d").ok());
}

TEST_CASE("durations are integer picoseconds and saturate") {
  Duration a = Duration::Seconds(1.5);
  CHECK(a.picoseconds() == 1500000000000LL);
  CHECK((a + a).seconds() == doctest::Approx(3.0));
  CHECK(Duration::Seconds(1e30).is_infinite());
  CHECK((Duration::Infinite() + a).is_infinite());
  CHECK(TransferTime(Bytes::GB(10), Bandwidth::GBps(50)).seconds() == doctest::Approx(0.2));
  CHECK(ComputeTime(Flops(989.4e12), FlopRate::TFLOPs(989.4)).seconds() == doctest::Approx(1.0));
}

TEST_CASE("RoundHalfAway rounds as std::llround does, halves away from zero") {
  for (double x : {0.0, 0.4999999999999999, 0.5, 1.5, 2.5, -0.5, -1.5, -2.4999999, 1e15 + 0.5,
                   4503599627370497.0, 9.0e18, -9.0e18, 123456789.987654321}) {
    CHECK(RoundHalfAway(x) == std::llround(x));
  }
}

TEST_CASE("FormatSeconds writes any length, never saturated") {
  // Issue 62: an MTBF of 128 days printed as "inf" (through a saturated Duration).
  CHECK(FormatSeconds(128 * 86400.0) == "128.0 days");
  CHECK(FormatSeconds(1e9) == "11574.1 days");
  CHECK(FormatSeconds(0.0123) == "12.300 ms");
  CHECK(FormatSeconds(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(FormatDuration(Duration::Seconds(0.0123)) == FormatSeconds(0.0123));
}

TEST_CASE("FormatCount prints a count in its unit; PrintedCount is the number it reads as") {
  struct Case {
    double x;
    const char* text;
    double printed;
  };
  for (const Case& c : {Case{512.4, "512", 512}, Case{33'149, "33.1k", 33'100},
                        Case{1'204'321, "1.20M", 1'200'000}, Case{2.345e9, "2.35B", 2.35e9}}) {
    CAPTURE(c.x);
    CHECK(FormatCount(c.x) == c.text);
    CHECK(PrintedCount(c.x) == doctest::Approx(c.printed));
  }
}

}  // namespace
}  // namespace parasim
