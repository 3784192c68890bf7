// The whole fit (`parasim fit`), without a GPU: synthetic measurements made by the cost model
// with known parameters are fitted back within 1%, family after family; nccl-tests logs of one
// and two nodes fit both fabrics; measurements of another GPU are refused. Each family's own
// tests are beside it (kernel_fit_test, collective_fit_test, system_fit_test).
#include "hardware/fit.h"

#include <doctest/doctest.h>

#include "hardware/cost_model.h"
#include "hardware/fit_testing.h"

namespace parasim {
namespace {

TEST_CASE("fit recovers known parameters from synthetic measurements within 1%") {
  ClusterSpec truth = H100Cluster(4);
  truth.gpu.gemm_efficiency = 0.72;
  truth.gpu.memory_efficiency = 0.88;
  truth.gpu.launch_overhead = Duration::Microseconds(5);
  truth.intra.efficiency = 0.70;
  truth.intra.latency = Duration::Microseconds(2);
  truth.inter.efficiency = 0.85;
  truth.inter.latency = Duration::Microseconds(7);
  Measurements m = Synthetic(truth);
  auto r = FitMeasurements({m}, H100Cluster(4));  // starts from the catalog's defaults
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const CalibrationProfile& p = r->profile;
  CHECK(*p.gemm_efficiency == doctest::Approx(0.72).epsilon(0.01));
  CHECK(*p.memory_efficiency == doctest::Approx(0.88).epsilon(0.01));
  CHECK(p.launch_overhead->microseconds() == doctest::Approx(5).epsilon(0.01));
  REQUIRE(p.fabrics.size() == 2);
  CHECK(p.fabrics[0].id == "nvlink4-h100");
  CHECK(*p.fabrics[0].efficiency == doctest::Approx(0.70).epsilon(0.01));
  CHECK(p.fabrics[0].latency->microseconds() == doctest::Approx(2).epsilon(0.01));
  CHECK(p.fabrics[1].id == "ib-ndr-400g");
  CHECK(*p.fabrics[1].efficiency == doctest::Approx(0.85).epsilon(0.01));
  CHECK(p.fabrics[1].latency->microseconds() == doctest::Approx(7).epsilon(0.01));
  for (const auto& f : r->families) {
    CAPTURE(f.family);
    CHECK(f.r2 > 0.999);
    CHECK(f.mape < 0.01);
  }
}

TEST_CASE("the NICs' efficiency is fitted where the catalog's would price rings at NVLink's rate") {
  // The catalog's 8 x 400 Gb/s NICs at 0.97 carry 388 GB/s a node, above NVLink's achieved rate,
  // so every ring across two nodes was priced at NVLink's and the fit could not move the NICs'
  // efficiency: it wrote the catalog's 0.97 as fitted (a log at 300 GB/s busbw, 0.75).
  const ClusterSpec start = H100Cluster(4);
  REQUIRE(start.inter.bandwidth.bytes_per_second() * start.inter.efficiency * start.nics() >
          start.intra.bandwidth.bytes_per_second() * start.intra.efficiency);
  for (double eff : {0.75, 0.10}) {
    CAPTURE(eff);
    ClusterSpec truth = start;
    truth.inter.efficiency = eff;
    // A two-node all_gather_perf log alone, as nccl-tests measures it: 16 ranks, 8 a node.
    Measurements m;
    m.file = "all_gather_perf.log";
    m.gpu = truth.gpu.id;
    CostModel cm(truth, Dtype::kBf16);
    for (double mib = 1; mib <= 4096; mib *= 4) {
      const Bytes b = Bytes::MiB(mib);
      m.collectives.push_back({Collective::kAllGather, "", 16, 8, b,
                               cm.CollectiveTime(Collective::kAllGather, b, {16, 8}).time});
    }
    auto r = FitMeasurements({m}, start);
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    REQUIRE(r->profile.fabrics.size() == 1);  // the log crosses the NICs alone
    CHECK(r->profile.fabrics[0].id == "ib-ndr-400g");
    CHECK(*r->profile.fabrics[0].efficiency == doctest::Approx(eff).epsilon(0.01));
  }
}

TEST_CASE("nccl-tests logs fit both fabrics: NVLink from one node, the NIC from two") {
  auto ar = LoadMeasurements("hardware/testdata/all_reduce_perf_8gpu.log");
  REQUIRE_MESSAGE(ar.ok(), ar.status().message());
  auto ag = LoadMeasurements("hardware/testdata/all_gather_perf_2node.log");
  REQUIRE_MESSAGE(ag.ok(), ag.status().message());
  auto r = FitMeasurements({*ar, *ag}, H100Cluster(2));
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  REQUIRE(r->profile.fabrics.size() == 2);
  CHECK(r->profile.fabrics[0].id == "nvlink4-h100");
  CHECK(r->profile.fabrics[1].id == "ib-ndr-400g");
  CHECK(r->profile.source.find("all_reduce_perf_8gpu.log, all_gather_perf_2node.log") !=
        std::string::npos);
}

TEST_CASE("measurements of another GPU, or of nothing, are refused") {
  auto a100 = ParseMeasurements("gpu: a100-sxm4-80gb\nlaunch: 4us\n", "a.yaml");
  REQUIRE(a100.ok());
  auto other = FitMeasurements({*a100}, H100Cluster(1));
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().message().find("a.yaml:1:1: error: gpu: measured on 'a100-sxm4-80gb'") !=
        std::string::npos);
  CHECK(other.status().message().find("pass --gpu a100-sxm4-80gb") != std::string::npos);
  Measurements nothing;
  nothing.file = "n.yaml";
  auto none = FitMeasurements({nothing}, H100Cluster(1));
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("hold no GEMM") != std::string::npos);
}

// Before: "fit: the measurements hold no GEMM, memory, collective or contention points", whatever
// reading had passed over and the fitters had skipped.
TEST_CASE("a fit of nothing says why: the notes of reading and the points skipped") {
  Measurements passed;
  passed.file = "reduce_perf.log";
  passed.notes.push_back(
      "reduce_perf.log:1: the reduce run (lines 1-27) passed over: the cost model prices no "
      "reduce");
  auto none = FitMeasurements({passed}, H100Cluster(1));
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message() ==
        "reduce_perf.log:1:1: error: nothing to fit: the measurements hold no GEMM, memory, "
        "collective or contention point the fit can use:\n  reduce_perf.log:1: the reduce run "
        "(lines 1-27) passed over: the cost model prices no reduce");
  Measurements one;
  one.file = "all_reduce_perf.log";
  one.collectives.push_back({Collective::kAllReduce, "", 1, 1, Bytes::MiB(64),
                             Duration::Microseconds(300), 0, "all_reduce_perf.log:9"});
  auto lone = FitMeasurements({one}, H100Cluster(1));
  REQUIRE_FALSE(lone.ok());
  CHECK(lone.status().message().find("all_reduce_perf.log:1:1: error: nothing to fit") == 0);
  CHECK(lone.status().message().find("\n  skipped: ") != std::string::npos);
  CHECK(lone.status().message().find("one rank moves nothing") != std::string::npos);
}

}  // namespace
}  // namespace parasim
