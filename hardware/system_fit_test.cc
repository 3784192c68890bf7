// The families around the kernels, without a GPU: host copies give a latency and a bandwidth,
// contention rows the mean slowdowns at the stand-in's SM count nearest 16, sustained rows a
// report.
#include "hardware/system_fit.h"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "hardware/fit_testing.h"

namespace parasim {
namespace {

FitResult FitSystem(const Measurements& m) {
  return RunFit(m, H100Cluster(1), {FitHostCopies, FitContention, FitSustained});
}

TEST_CASE("host copies give a bandwidth and a latency per direction") {
  Measurements m;
  m.file = "host.yaml";
  for (double mib : {1.0, 16.0, 256.0, 1024.0}) {
    const Bytes b = Bytes::MiB(mib);
    // 10 us + bytes at 50 GB/s (PCIe 5 x16 pinned, about what H100 hosts reach).
    m.host_copies.push_back({"h2d", b, Duration::Seconds(10e-6 + b.bytes() / 50e9), 0});
  }
  m.host_copies.push_back({"d2h", Bytes::MiB(1), Duration::Microseconds(40), 0});  // one: no fit
  const FitResult r = FitSystem(m);
  REQUIRE(r.families.size() == 1);
  const FamilyFit& f = r.families[0];
  CHECK(f.family == "host copies h2d");
  CHECK(f.points == 4);
  CHECK(f.fitted.find("50.0 GB/s") != std::string::npos);
  CHECK(f.fitted.find("10.0") != std::string::npos);
  CHECK(f.mape < 0.001);
}

TEST_CASE("contention fits the mean slowdowns beside a spinning stand-in nearest 16 SMs") {
  Measurements m;
  m.file = "c.yaml";
  // Spinning on 16 SMs: GEMMs 1.2x and 1.4x (mean 1.3), the copy 1.05x. Other block counts and
  // the copying stand-in are measured but not fitted.
  m.contention = {
      ContentionRow("gemm", "spin", 16, 1000, 1200), ContentionRow("gemm", "spin", 16, 500, 700),
      ContentionRow("gemm", "spin", 32, 1000, 2000), ContentionRow("gemm", "copy", 16, 1000, 1900),
      ContentionRow("copy", "spin", 16, 800, 840),   ContentionRow("copy", "spin", 8, 800, 1600)};
  const FitResult r = FitSystem(m);
  REQUIRE(r.profile.contended_compute.has_value());
  CHECK(*r.profile.contended_compute == doctest::Approx(1.3));
  CHECK(*r.profile.contended_memory == doctest::Approx(1.05));
  REQUIRE(r.families.size() == 2);
  CHECK(r.families[0].family == "contention compute");
  CHECK(r.families[0].points == 2);
  CHECK(r.families[0].fitted == "contended_compute 1.3x beside a collective on 16 SMs");
  CHECK(r.families[1].family == "contention memory");
  // A victim a hair faster beside the stand-in (timing noise) is taken as not slowed; one
  // clearly faster, or slower than the profile's range (1 to 4) holds, is kept at the bound and
  // said, so that --out refuses it (it wrote contended_memory 10000, which no run could load).
  Measurements noise;
  noise.contention = {ContentionRow("gemm", "spin", 12, 1000, 980)};
  const FitResult n = FitSystem(noise);
  CHECK(*n.profile.contended_compute == doctest::Approx(1.0));
  CHECK(n.families[0].at_bound.empty());
  CHECK_FALSE(n.profile.contended_memory.has_value());
  Measurements odd;
  odd.contention = {ContentionRow("gemm", "spin", 16, 1000, 700),
                    ContentionRow("copy", "spin", 16, 700, 7000000)};
  const FitResult f = FitSystem(odd);
  CHECK(*f.profile.contended_compute == doctest::Approx(1.0));
  CHECK(*f.profile.contended_memory == doctest::Approx(4.0));
  REQUIRE(f.families.size() == 2);
  CHECK(f.families[0].at_bound.size() == 1);
  CHECK(f.families[1].at_bound.size() == 1);
  CHECK(FitRefusals(f).size() == 2);
}

TEST_CASE("sustained clocks are reported, not fitted") {
  Measurements m;
  m.sustained.push_back(
      {8192, 8192, 8192, 30, Duration::Microseconds(1400), Duration::Microseconds(1680)});
  const FitResult r = FitSystem(m);
  REQUIRE(r.families.size() == 1);
  CHECK(r.families[0].family == "sustained clocks");
  CHECK(r.families[0].fitted ==
        "8192x8192x8192 GEMMs: 0.833 of the first second's rate after 30 s (reported only)");
  CHECK_FALSE(r.profile.sustained_factor.has_value());
}

}  // namespace
}  // namespace parasim
