#include "hardware/readers/trace_gpu.h"

#include <doctest/doctest.h>

#include "hardware/readers/json_trace.h"
#include "hardware/readers/test_files.h"

namespace parasim {
namespace {

const HardwareCatalog& Catalog() {
  static const HardwareCatalog c = *LoadHardwareCatalog();
  return c;
}

TraceGpu Identify(const std::string& fixture) {
  auto t = ReadJsonTrace(testing::Fixture(fixture));
  REQUIRE(t.ok());
  return IdentifyTraceGpu(*t, Catalog());
}

TEST_CASE("deviceProperties name the catalog GPU") {
  const TraceGpu h800 = Identify("traces/deepseek-dualpipe-h800.json");
  CHECK(h800.name == "NVIDIA H800");
  CHECK(h800.catalog_id == "h800-sxm5-80gb");
  CHECK(h800.sms == 132);
  CHECK(h800.Describe() == "NVIDIA H800 (h800-sxm5-80gb, 132 SMs, 79.1 GiB)");
  CHECK(CheckTraceGpu(h800, "h800-sxm5-80gb").ok());
  const TraceGpu a100 = Identify("traces/resnet-a100-3steps.json");
  CHECK(a100.catalog_id == "a100-sxm4-80gb");
}

// The ResNet failure: an A100 trace against an H100 scenario went unremarked.
TEST_CASE("a trace from another GPU than the scenario's is refused with both names") {
  const Status st = CheckTraceGpu(Identify("traces/resnet-a100-3steps.json"), "h100-sxm5-80gb");
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("the trace ran on NVIDIA A100-SXM4-80GB (a100-sxm4-80gb, 108 SMs") !=
        std::string::npos);
  CHECK(st.message().find("the scenario on h100-sxm5-80gb") != std::string::npos);
  CHECK(st.message().find("--set cluster.gpu=a100-sxm4-80gb") != std::string::npos);
}

TEST_CASE("a GPU the catalog does not list, or none named") {
  ProfilerTraceBuilder b("v100.json");
  GpuEvent e;
  e.device = 1;
  b.AddEvent(e);
  b.trace().devices.push_back({0, "Tesla V100-SXM2-32GB", 80, 34089730048, 7, 0});
  b.trace().devices.push_back({1, "Tesla V100-SXM2-32GB", 80, 34089730048, 7, 0});
  const TraceGpu v100 = IdentifyTraceGpu(std::move(b).Finish(), Catalog());
  CHECK(v100.name == "Tesla V100-SXM2-32GB");
  CHECK(v100.device == 1);
  CHECK(v100.catalog_id.empty());
  const Status st = CheckTraceGpu(v100, "h100-sxm5-80gb");
  CHECK(st.message().find("no GPU of the catalog lists") != std::string::npos);
  CHECK(CheckTraceGpu(v100, "h100-sxm5-80gb", /*allow_unknown=*/true).ok());
  const TraceGpu none = IdentifyTraceGpu(ProfilerTraceBuilder("x.json").Finish(), Catalog());
  CHECK(CheckTraceGpu(none, "h100-sxm5-80gb").message().find("names no GPU") != std::string::npos);
}

}  // namespace
}  // namespace parasim
