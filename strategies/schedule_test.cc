// Contract tests run against every registered schedule, the built-ins' published figures, and
// a schedule added at run time: one class registered, then lowered, replayed and sized like
// any other.
#include "strategies/schedule.h"

#include <doctest/doctest.h>

#include <map>
#include <tuple>

#include "strategies/memory.h"
#include "strategies/step_test_bench.h"

namespace parasim {
namespace {

using testing::Bench;

// GPipe with backwards in reverse micro-batch order: a schedule that exists only here.
class ReverseGpipe : public PipelineSchedule {
 public:
  std::string_view name() const override { return "test-reverse-gpipe"; }
  std::vector<Unit> Order(const PipelineShape& shape, int) const override {
    std::vector<Unit> out;
    for (int64_t j = 0; j < shape.micro_batches; ++j) out.push_back({Phase::kF, 0, j});
    for (int64_t j = shape.micro_batches - 1; j >= 0; --j) out.push_back({Phase::kB, 0, j});
    return out;
  }
  double InFlight(const PipelineShape& shape, int) const override {
    return static_cast<double>(shape.micro_batches);
  }
};

TEST_CASE("every registered schedule runs each unit once, forward before backward") {
  for (ScheduleId id : AllSchedules()) {
    const PipelineSchedule& s = ScheduleOf(id);
    CAPTURE(s.name());
    CHECK(*FindSchedule(s.name()) == id);
    for (auto [p, m] : {std::pair{1, 1}, {4, 8}, {4, 16}, {8, 8}}) {
      const PipelineShape shape{p, s.interleaves() ? 2 : 1, m};
      for (int stage = 0; stage < p; ++stage) {
        std::map<std::tuple<int, int, int64_t>, int> seen;  // (phase, chunk, mb) -> position
        const auto order = s.Order(shape, stage);
        CHECK(order.size() == static_cast<size_t>(2 * shape.chunks * m));
        for (size_t i = 0; i < order.size(); ++i) {
          seen[{static_cast<int>(order[i].phase), order[i].chunk, order[i].mb}] =
              static_cast<int>(i);
        }
        CHECK(seen.size() == order.size());
        for (const auto& [key, pos] : seen) {
          if (std::get<0>(key) != static_cast<int>(Phase::kB)) continue;
          const auto f =
              seen.find({static_cast<int>(Phase::kF), std::get<1>(key), std::get<2>(key)});
          REQUIRE(f != seen.end());
          CHECK(f->second < pos);
        }
        CHECK(s.InFlight(shape, stage) >= 1);
      }
    }
  }
}

TEST_CASE("built-in schedules: in-flight micro-batches and ideal bubble as published") {
  const PipelineShape shape{4, 1, 16};
  // GPipe holds all m; 1F1B stage s holds min(p - s, m) (Korthikanti et al. 2022, Sec. 4.2.3).
  CHECK(ScheduleOf(kScheduleGpipe).InFlight(shape, 0) == 16);
  CHECK(ScheduleOf(kSchedule1F1B).InFlight(shape, 0) == 4);
  CHECK(ScheduleOf(kSchedule1F1B).InFlight(shape, 3) == 1);
  // Interleaving multiplies by 1 + (p-1)/(p v) and divides the bubble (p-1)/m by v.
  const PipelineShape v2{4, 2, 16};
  CHECK(ScheduleOf(kScheduleInterleaved).InFlight(v2, 0) == doctest::Approx(4 * (1 + 3.0 / 8)));
  CHECK(ScheduleOf(kSchedule1F1B).IdealBubble(shape) == doctest::Approx(0.1875));
  CHECK(ScheduleOf(kScheduleInterleaved).IdealBubble(v2) == doctest::Approx(0.1875 / 2));
  CHECK(ScheduleOf(kScheduleInterleaved).Constraint({4, 2, 6}).find("multiple of pp = 4") !=
        std::string::npos);
  CHECK(ScheduleOf(kScheduleInterleaved).Constraint({4, 2, 8}).empty());
}

TEST_CASE("names: the alias finds interleaved-1f1b, an unknown name lists the accepted ones") {
  CHECK(*FindSchedule("interleaved") == kScheduleInterleaved);
  auto bad = FindSchedule("zigzag");
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("gpipe | 1f1b | interleaved-1f1b") != std::string::npos);
}

TEST_CASE("a schedule registered at run time is lowered, replayed and sized like a built-in") {
  const ScheduleId id = RegisterSchedule(std::make_unique<ReverseGpipe>());
  CHECK(*FindSchedule("test-reverse-gpipe") == id);
  Bench b(4);
  b.UniformStages();
  b.l.pp = 4;
  b.t.global_batch = 16;
  b.l.schedule = kScheduleGpipe;
  const StepReport gpipe = b.Run();
  b.l.schedule = id;
  const StepReport reverse = b.Run();
  // The same work in another order: the bubble is GPipe's (p-1)/m and so is the step time.
  CHECK(reverse.bubble_fraction == doctest::Approx(0.1875).epsilon(0.5 / 18.75));
  CHECK(reverse.step_time_s == doctest::Approx(gpipe.step_time_s).epsilon(0.01));
  // The memory planner asks the schedule: all 16 micro-batches in flight, as GPipe.
  CHECK(EstimateMemory(b.model, b.t, b.l, b.cluster).stages[0].in_flight == 16);
}

}  // namespace
}  // namespace parasim
