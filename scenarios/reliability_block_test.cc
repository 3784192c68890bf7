#include "scenarios/reliability_block.h"

#include <doctest/doctest.h>

#include <string>

#include "scenarios/block_testing.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

Status Read(const std::string& text, Reliability* r) {
  return testing::ReadBlock(text, "reliability", [&](const YamlContext& ctx, const YAML::Node& n) {
    return ParseReliability(ctx, n, r);
  });
}

TEST_CASE("`none` turns the goodput model off; a mapping keeps the defaults it leaves out") {
  Reliability r;
  REQUIRE(Read("reliability: none\n", &r).ok());
  CHECK_FALSE(r.enabled);
  Reliability m;
  REQUIRE(Read("reliability: {checkpoint: async, straggler: 0.02}\n", &m).ok());
  CHECK(m.block);
  CHECK(m.async_checkpoint);
  CHECK(m.straggler == 0.02);
  CHECK(m.gpu == kRscGpuFailuresPerDay);
  CHECK(m.runs == 200);
  CHECK(Read("reliability: off\n", &r).message().find("expected `none` or a mapping") !=
        std::string::npos);
}

TEST_CASE("a failure rate per component-day, or an MTBF with a time unit") {
  Reliability r;
  REQUIRE(Read("reliability: {gpu: 4.9e-4, node: 2000d, switch: 1e-3}\n", &r).ok());
  CHECK(r.gpu == 4.9e-4);
  CHECK(r.node == doctest::Approx(1.0 / 2000));
  CHECK(r.switches == 1e-3);
  CHECK(Read("reliability: {link: often}\n", &r)
            .message()
            .find("neither a rate per "
                  "component-day") != std::string::npos);
  // An MTBF as short as the rate's cap (1000 a day) and no shorter: 1ns had run to inf days.
  REQUIRE(Read("reliability: {gpu: 86.4s}\n", &r).ok());
  CHECK(r.gpu == doctest::Approx(1000));
  CHECK(Read("reliability: {gpu: 1ns}\n", &r).message().find("at least 86.4s") !=
        std::string::npos);
}

TEST_CASE("times, bandwidths, the window and the Monte Carlo runs") {
  Reliability r;
  REQUIRE(Read("reliability: {detection: 5min, relaunch: 30s, checkpoint_interval: 1h, "
               "storage_write: 1TB/s, storage_read: 3TB/s, host_copy: 20GB/s, window: 54d, seed: "
               "7, runs: 10, step_samples: 0, planned_per_day: 0.5}\n",
               &r)
              .ok());
  CHECK(r.detection == Duration::Seconds(300));
  CHECK(r.relaunch == Duration::Seconds(30));
  CHECK(r.checkpoint_interval == Duration::Seconds(3600));
  CHECK(r.storage_write.bytes_per_second() == 1e12);
  CHECK(r.storage_read.bytes_per_second() == 3e12);
  CHECK(r.host_copy.bytes_per_second() == 20e9);
  CHECK(r.window_s == 54 * 86400.0);
  CHECK(r.seed == 7);
  CHECK(r.runs == 10);
  CHECK(r.step_samples == 0);
  CHECK(r.planned_per_day == 0.5);
  CHECK(Read("reliability: {storage_write: 0GB/s}\n", &r)
            .message()
            .find("expected a bandwidth of at least 1MB/s") != std::string::npos);
  CHECK(Read("reliability: {storage_write: 1B/s}\n", &r)
            .message()
            .find("expected a bandwidth of at least 1MB/s") != std::string::npos);
  Reliability w;
  CHECK(Read("reliability: {window: 1e308s}\n", &w).message().find("at most 3652.5d") !=
        std::string::npos);
  CHECK(Read("reliability: {window: 0s}\n", &w).message().find("more than 0") != std::string::npos);
  CHECK(Read("reliability: {mtbf: 3d}\n", &r).message().find("unknown key 'mtbf'") !=
        std::string::npos);
}

}  // namespace
}  // namespace parasim
