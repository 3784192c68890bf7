#include "hardware/readers/profiler_trace.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("events go to the step that launched them, by correlation id") {
  ProfilerTraceBuilder b("t.json");
  b.AddStep({2, 1000, 1000});  // [1000, 2000)
  b.AddStep({1, 0, 1000});     // [0, 1000), given out of order
  b.AddStep({2, 1000, 500});   // a narrower duplicate of step 2
  b.AddLaunch({7, 900});       // launched in step 1...
  b.AddLaunch({8, 1500});
  GpuEvent e;
  e.name = b.InternName("gemm");
  e.correlation = 7;
  e.start_ns = 1200;  // ...run in step 2's time
  b.AddEvent(e);
  e.correlation = 8;
  e.start_ns = 1600;
  b.AddEvent(e);
  e.correlation = -1;  // no launch seen: by its own start
  e.start_ns = 5000;
  b.AddEvent(e);
  ProfilerTrace t = std::move(b).Finish();
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0].number == 1);
  CHECK(t.steps[1].dur_ns == 1000);
  CHECK(t.events[0].step == 0);
  CHECK(t.events[1].step == 1);
  CHECK(t.events[2].step == -1);
  CHECK(t.names.size() == 1);
  CHECK(t.name(t.events[2]) == "gemm");
}

TEST_CASE("the main device and its properties") {
  ProfilerTraceBuilder b("t.json");
  GpuEvent e;
  e.device = 3;
  b.AddEvent(e);
  b.AddEvent(e);
  e.device = 1;
  b.AddEvent(e);
  b.trace().devices.push_back({3, "NVIDIA H800", 132, 84943110144, 9, 0});
  ProfilerTrace t = std::move(b).Finish();
  CHECK(t.MainDevice() == 3);
  REQUIRE(t.Device(3) != nullptr);
  CHECK(t.Device(3)->sms == 132);
  CHECK(t.Device(1) == nullptr);
}

TEST_CASE("invalid UTF-8 is replaced, valid text kept") {
  bool repaired = false;
  CHECK(RepairUtf8("ncclKernel \xC3\xA9", &repaired) == "ncclKernel \xC3\xA9");
  CHECK_FALSE(repaired);
  CHECK(RepairUtf8("a\xFF"
                   "b\xC0\xAF"
                   "c\xED\xA0\x80",
                   &repaired) ==
        "a\xEF\xBF\xBD"
        "b\xEF\xBF\xBD\xEF\xBF\xBD"
        "c\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(repaired);
  CHECK(RepairUtf8("\xF0\x9F\x98", &repaired) == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace parasim
