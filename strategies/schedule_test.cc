// Contract tests run against every registered schedule, the built-ins' published figures, and
// a schedule added at run time: one class registered, then lowered, replayed and sized like
// any other.
#include "strategies/schedule.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
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
      const PipelineShape shape{p, s.interleaves() || s.mirrored() ? 2 : 1, m};
      if (!s.Constraint(shape).empty()) continue;
      for (int stage = 0; stage < p; ++stage) {
        std::map<std::tuple<int, int, int64_t>, int> seen;  // (phase, chunk, mb) -> position
        const auto order = s.Order(shape, stage);
        const int units = s.splits_backward() ? 3 : 2;
        CHECK(order.size() == static_cast<size_t>(units * shape.chunks * ChunkMicroBatches(s, m)));
        for (size_t i = 0; i < order.size(); ++i) {
          seen[{static_cast<int>(order[i].phase), order[i].chunk, order[i].mb}] =
              static_cast<int>(i);
        }
        CHECK(seen.size() == order.size());
        for (const auto& [key, pos] : seen) {
          // F before B, and B before W.
          const int ph = std::get<0>(key);
          if (ph != static_cast<int>(Phase::kB) && ph != static_cast<int>(Phase::kW)) continue;
          const Phase before = ph == static_cast<int>(Phase::kB) ? Phase::kF : Phase::kB;
          const auto f = seen.find({static_cast<int>(before), std::get<1>(key), std::get<2>(key)});
          REQUIRE(f != seen.end());
          CHECK(f->second < pos);
        }
        CHECK(s.InFlight(shape, stage) >= 1);
      }
    }
  }
}

TEST_CASE("peak states give the walk's peak exactly, or decline") {
  // Every registered schedule and a spread of shapes; per stage, chunk bytes that are whole
  // numbers (held for W: none, less than, or more than the chunk's own, as full recompute
  // makes it), then fractional ones, which the states decline.
  uint64_t seed = 12345;
  auto next = [&]() {  // a fixed linear congruential sequence: the test is deterministic
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(seed >> 40);
  };
  int from_states = 0, walked = 0;
  for (ScheduleId id : AllSchedules()) {
    const PipelineSchedule& s = ScheduleOf(id);
    for (auto [p, v, m] :
         {std::tuple{1, 1, 4}, {4, 1, 8}, {4, 2, 16}, {8, 1, 32}, {8, 4, 64}, {16, 2, 48}}) {
      Layout l;
      l.schedule = id;
      l.pp = p;
      l.virtual_stages = v;
      const PipelineShape shape{p, ChunksOf(l), m};
      if (!s.Constraint(shape).empty()) continue;
      CAPTURE(s.name());
      CAPTURE(p);
      CAPTURE(m);
      const auto orders = LayoutOrders(l, shape);
      const auto states = SharedPeakStates(l, shape);
      REQUIRE(states->size() == orders.size());
      for (size_t st = 0; st < orders.size(); ++st) {
        for (int trial = 0; trial < 3; ++trial) {
          std::vector<double> a(shape.chunks), w(shape.chunks);
          for (int c = 0; c < shape.chunks; ++c) {
            a[c] = 1 + next();
            w[c] = !s.splits_backward() ? 0
                   : trial == 0         ? std::floor(next() / 4)
                   : trial == 1         ? 0
                                        : 2 * a[c];
          }
          const double walk = PeakActivationBytes(orders[st], a, w);
          const std::optional<double> fast = PeakActivationBytes((*states)[st], a, w);
          if (fast) {
            CHECK(*fast == walk);
            ++from_states;
          } else {
            CHECK((*states)[st].walk);
            ++walked;
          }
          a[0] += 0.5;
          CHECK_FALSE(PeakActivationBytes((*states)[st], a, w).has_value());
        }
      }
    }
  }
  // Both paths ran (1F1B and the ZB-H schedules keep a few states; interleaving keeps many).
  CHECK(from_states > 100);
  CHECK(walked > 0);
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
  CHECK(ScheduleOf(kSchedule1F1B).IdealBubble(shape, {}) == doctest::Approx(0.1875));
  CHECK(ScheduleOf(kScheduleInterleaved).IdealBubble(v2, {}) == doctest::Approx(0.1875 / 2));
  CHECK(ScheduleOf(kScheduleInterleaved).Constraint({4, 2, 6}).find("multiple of pp = 4") !=
        std::string::npos);
  CHECK(ScheduleOf(kScheduleInterleaved).Constraint({4, 2, 8}).empty());
}

TEST_CASE("interleaved 1F1B in micro-batch groups: Megatron-Core's schedule table and warm-up") {
  const PipelineSchedule& il = ScheduleOf(kScheduleInterleaved);
  // Groups of pp (the default, group 0) are the SC21 order: for p = 4, v = 2, m = 8 stage 0 runs
  // forwards of chunk 0 for micro-batches 0-3, chunk 1 for 0-3, then chunk 0 for 4-7, ...
  const PipelineShape sc21{4, 2, 8};
  PipelineShape same = sc21;
  same.group = 4;
  CHECK(il.Order(sc21, 0) == il.Order(same, 0));
  CHECK(il.Order(sc21, 3) == il.Order(same, 3));
  // Megatron-Core (schedules.py, get_schedule_table and get_pp_rank_microbatches) with
  // --microbatch-group-size-per-virtual-pipeline-stage 5, pp 4 and 5 micro-batches, as the
  // megatron-ci gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap runs group them (they have three
  // chunks; two here): one group of 5, chunk 0 then chunk 1; the last stage warms up with
  // (v - 1) n = 5 forwards, the first with 6 + 5.
  PipelineShape g{4, 2, 5};
  g.group = 5;
  CHECK(il.Constraint(g).empty());
  CHECK_FALSE(il.Constraint({4, 2, 5}).empty());  // without the group: 5 is no multiple of 4
  const std::vector<Unit> last = il.Order(g, 3);
  REQUIRE(last.size() == 20);
  for (int k = 0; k < 5; ++k) {
    CHECK(last[static_cast<size_t>(k)].phase == Phase::kF);
    CHECK(last[static_cast<size_t>(k)].chunk == 0);
    CHECK(last[static_cast<size_t>(k)].mb == k);
  }
  // Then 1F1B pairs: chunk 1's forward of micro-batch 0 and the backward of chunk 1 (the table
  // reversed) of micro-batch 0.
  CHECK(last[5].phase == Phase::kF);
  CHECK(last[5].chunk == 1);
  CHECK(last[5].mb == 0);
  CHECK(last[6].phase == Phase::kB);
  CHECK(last[6].chunk == 1);
  CHECK(last[6].mb == 0);
  const std::vector<Unit> first = il.Order(g, 0);
  int warmup = 0;
  while (first[static_cast<size_t>(warmup)].phase == Phase::kF) ++warmup;
  CHECK(warmup == 10);  // all 10 units' forwards: min(2 (p - 1) + (v - 1) n, m v)
  // A group outside [pp, m], or a last group of fewer than pp, as Megatron-Core refuses.
  g.group = 3;
  CHECK(il.Constraint(g).find("from pp = 4") != std::string::npos);
  PipelineShape rem{4, 2, 9};
  rem.group = 5;  // a last group of 4: allowed
  CHECK(il.Constraint(rem).empty());
  rem.micro_batches = 7;  // groups of 5 and 2: the 2 stalls the pipeline
  CHECK(il.Constraint(rem).find("at least pp = 4") != std::string::npos);
  // Every unit once, forward before backward, whatever the group.
  for (int64_t n : {4, 5, 6, 9}) {
    PipelineShape sh{4, 3, 9};
    sh.group = n;
    if (!il.Constraint(sh).empty()) continue;
    for (int st = 0; st < 4; ++st) {
      const std::vector<Unit> o = il.Order(sh, st);
      CHECK(o.size() == 2 * 3 * 9);
      std::set<std::tuple<int, int, int64_t>> seen;
      for (const Unit& u : o) {
        if (u.phase == Phase::kB) CHECK(seen.count({0, u.chunk, u.mb}) == 1);
        CHECK(seen.insert({u.phase == Phase::kF ? 0 : 1, u.chunk, u.mb}).second);
      }
    }
  }
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
  // The same work in another order: the bubble is GPipe's ((p-1)/m of the work, 3/19 of the
  // step) and so is the step time.
  CHECK(reverse.bubble_fraction == doctest::Approx(3.0 / 19).epsilon(0.05));
  CHECK(reverse.bubble_fraction == doctest::Approx(gpipe.bubble_fraction).epsilon(0.01));
  CHECK(reverse.step_time_s == doctest::Approx(gpipe.step_time_s).epsilon(0.01));
  // The memory planner asks the schedule: all 16 micro-batches in flight, as GPipe.
  CHECK(EstimateMemory(b.model, b.t, b.l, b.cluster).stages[0].in_flight == 16);
}

// Replays a schedule's orders with fixed unit times (F, B, W; transfers free): per stage, when
// its first unit started, when its last ended, and how long it worked. The schedule's own
// model, in which the published bubbles are stated.
struct UnitReplay {
  std::vector<int64_t> first, end, work;
};
UnitReplay ReplayUnits(const PipelineSchedule& s, const PipelineShape& shape, int64_t f, int64_t b,
                       int64_t w) {
  const int p = shape.stages;
  std::vector<std::vector<Unit>> order = s.Orders(shape);
  std::vector<size_t> pos(p, 0);
  UnitReplay r{std::vector<int64_t>(p, -1), std::vector<int64_t>(p, 0), std::vector<int64_t>(p, 0)};
  // (phase, virtual stage, mb) -> end
  std::map<std::tuple<int, int, int64_t>, int64_t> done;
  const int V = p * shape.chunks;
  const int64_t kSplitB = s.splits_backward() ? b : b + w;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int k = 0; k < p; ++k) {
      if (pos[k] >= order[k].size()) continue;
      const Unit u = order[k][pos[k]];
      const int g = VirtualStageOf(s, p, k, u.chunk);
      std::tuple<int, int, int64_t> dep;
      if (u.phase == Phase::kF) {
        dep = {static_cast<int>(Phase::kF), g - 1, u.mb};
      } else if (u.phase == Phase::kB) {
        dep = g == V - 1 ? std::tuple{static_cast<int>(Phase::kF), g, u.mb}
                         : std::tuple{static_cast<int>(Phase::kB), g + 1, u.mb};
      } else {
        dep = {static_cast<int>(Phase::kB), g, u.mb};
      }
      int64_t ready = 0;
      if (!(u.phase == Phase::kF && g == 0)) {
        auto it = done.find(dep);
        if (it == done.end()) continue;
        ready = it->second;
      }
      const int64_t d = u.phase == Phase::kF ? f : u.phase == Phase::kB ? kSplitB : w;
      const int64_t start = std::max(r.end[k], ready);
      if (r.first[k] < 0) r.first[k] = start;
      r.end[k] = start + d;
      r.work[k] += d;
      done[{static_cast<int>(u.phase), g, u.mb}] = r.end[k];
      ++pos[k];
      progress = true;
    }
  }
  return r;
}

int64_t UnitMakespan(const PipelineSchedule& s, const PipelineShape& shape, int64_t f, int64_t b,
                     int64_t w) {
  const UnitReplay r = ReplayUnits(s, shape, f, b, w);
  return *std::max_element(r.end.begin(), r.end.end());
}

// The most chunks a stage's order holds between their F and their `until` unit: B (the
// activations between F and B, W's not counted) or W (a split backward's W frees what B left).
int64_t PeakUntil(const std::vector<Unit>& order, Phase until) {
  int64_t open = 0, peak = 0;
  for (const Unit& u : order) {
    open += u.phase == Phase::kF ? 1 : u.phase == until ? -1 : 0;
    peak = std::max(peak, open);
  }
  return peak;
}
int64_t PeakOpen(const std::vector<Unit>& order) { return PeakUntil(order, Phase::kB); }
int64_t PeakHeld(const std::vector<Unit>& order) { return PeakUntil(order, Phase::kW); }

TEST_CASE("ZB-H1: bubble (p-1)(F+B-W) where 1F1B leaves (p-1)(F+B+W) (Qi et al. 2024, Table 2)") {
  const PipelineSchedule& zb = ScheduleOf(*FindSchedule("zb-h1"));
  const PipelineSchedule& one = ScheduleOf(kSchedule1F1B);
  CHECK(zb.splits_backward());
  for (int p : {2, 4, 8, 16}) {
    for (int64_t m : {int64_t{p}, int64_t{2} * p, int64_t{4} * p}) {
      CAPTURE(p);
      CAPTURE(m);
      const PipelineShape shape{p, 1, m};
      // F = B = W = 1 unit.
      CHECK(UnitMakespan(one, shape, 1, 1, 1) == 3 * m + 3 * (p - 1));
      CHECK(UnitMakespan(zb, shape, 1, 1, 1) == 3 * m + (p - 1));
      // 1F1B's limit between F and B holds, and the paper's peak p M_B: at most p micro-batches
      // between F and W on any stage (the greedy order before 2026-11-30 held 2p - 1 on stage 0).
      for (int s = 0; s < p; ++s) {
        CHECK(PeakOpen(zb.Order(shape, s)) <= std::min<int64_t>(p - s, m));
        CHECK(PeakHeld(zb.Order(shape, s)) <= std::min<int64_t>(p, m));
      }
    }
    // Fewer micro-batches than stages: the critical path, m F's down and one micro-batch's B's
    // back up before stage 0's B's and W's.
    for (int64_t m = 1; m < p; ++m) {
      CAPTURE(m);
      CHECK(UnitMakespan(zb, PipelineShape{p, 1, m}, 1, 1, 1) == 2 * p - 1 + 2 * m);
    }
  }
}

TEST_CASE("the ideal bubble takes the layout's own F, B and W: ZB-H1's and DualPipe's, replayed") {
  // Unit replays with unequal times: ZB-H1's makespan over m(F+B+W) is 1 + its ideal bubble
  // (p-1)(F+B-W)/(m(F+B+W)) while W fills the cooldown (W <= B here).
  const PipelineSchedule& zb = ScheduleOf(*FindSchedule("zb-h1"));
  for (auto [f, b, w] : {std::tuple{2, 3, 1}, {3, 4, 2}, {1, 2, 1}}) {
    for (int p : {4, 8}) {
      const int64_t m = 3 * p;
      CAPTURE(f);
      CAPTURE(b);
      CAPTURE(w);
      CAPTURE(p);
      const PipelineShape shape{p, 1, m};
      const double work = static_cast<double>(m) * (f + b + w);
      const double replayed = static_cast<double>(UnitMakespan(zb, shape, f, b, w)) / work - 1;
      const UnitTimes t{static_cast<double>(f), static_cast<double>(b), static_cast<double>(w)};
      CHECK(zb.IdealBubble(shape, t) == doctest::Approx(replayed));
      CHECK(zb.IdealBubble(shape, t) ==
            doctest::Approx((p - 1.0) * (f + b - w) / (static_cast<double>(m) * (f + b + w))));
    }
  }
  // DualPipe, DeepSeek-V3 Table 2's (p/2-1)(F&B+B-3W) with its B the whole backward (B+W here)
  // and F&B = F+B+W: (p/2-1)(F+2B-W) over m(F+B+W).
  const PipelineSchedule& dual = ScheduleOf(*FindSchedule("dualpipe"));
  const PipelineShape shape{8, 2, 32};
  CHECK(dual.IdealBubble(shape, {2, 3, 1}) == doctest::Approx(3.0 * (2 + 6 - 1) / (32.0 * 6)));
  // Equal times give the published (p-2)/(3m).
  CHECK(dual.IdealBubble(shape, {5, 5, 5}) == doctest::Approx(6.0 / (3 * 32)));
  // 1F1B's (p-1)/m does not depend on them.
  CHECK(ScheduleOf(kSchedule1F1B).IdealBubble({8, 1, 32}, {2, 3, 1}) == doctest::Approx(7.0 / 32));
}

// Each stage's idle time between its first and last unit, with F = B = W = 1.
std::vector<int64_t> StageIdle(const PipelineSchedule& s, const PipelineShape& shape) {
  const UnitReplay r = ReplayUnits(s, shape, 1, 1, 1);
  std::vector<int64_t> idle(r.end.size());
  for (size_t k = 0; k < idle.size(); ++k) idle[k] = r.end[k] - r.first[k] - r.work[k];
  return idle;
}

TEST_CASE("ZB-H2: no stage idles inside its work ((p-1)(F+B-2W) = 0), 2p-1 in flight on stage 0") {
  const PipelineSchedule& h2 = ScheduleOf(*FindSchedule("zb-h2"));
  const PipelineSchedule& h1 = ScheduleOf(*FindSchedule("zb-h1"));
  CHECK(h2.splits_backward());
  for (int p : {2, 4, 8, 16}) {
    for (int64_t m : {int64_t{2} * p, int64_t{4} * p}) {
      CAPTURE(p);
      CAPTURE(m);
      const PipelineShape shape{p, 1, m};
      for (int64_t idle : StageIdle(h2, shape)) CHECK(idle == 0);
      // ZB-H1 leaves p-1-s units inside stage s (the wait for the first B).
      CHECK(StageIdle(h1, shape)[0] == p - 1);
      // One synchronised step still pays the fill on the last stage: ZB-H1's makespan.
      CHECK(UnitMakespan(h2, shape, 1, 1, 1) == 3 * m + (p - 1));
      CHECK(PeakOpen(h2.Order(shape, 0)) == 2 * p - 1);
      // The paper's (2p-1) M_B: no stage holds more between F and W (it had held up to 2p and,
      // deferring W's to the tail, 14 at p 4 and m 16).
      for (int s = 0; s < p; ++s) CHECK(PeakHeld(h2.Order(shape, s)) <= 2 * p - 1);
      CHECK(h2.InFlight(PipelineShape{p, 1, m}, 0) >= 2 * p - 1);
    }
  }
}

// Four uniform stages, DP2, 16 micro-batches per pipeline.
Bench FourStages() {
  Bench b(8);
  b.UniformStages();
  b.l.pp = 4;
  b.l.dp = 2;
  b.t.global_batch = 32;
  return b;
}

TEST_CASE("ZB-H1 replayed: a shorter step than 1F1B, W holding only its GEMMs' inputs") {
  Bench b = FourStages();
  b.l.schedule = kSchedule1F1B;
  const StepReport one = b.Run();
  b.l.schedule = *FindSchedule("zb-h1");
  const StepReport zb = b.Run();
  CHECK(zb.step_time_s < 0.93 * one.step_time_s);
  CHECK(zb.bubble_fraction < 0.6 * one.bubble_fraction);
  // The paper's peak, 1F1B's p M_B on stage 0: its deferred W's wait only where the stage
  // holds fewer than p micro-batches.
  CHECK(zb.peak_memory_bytes[0] == doctest::Approx(one.peak_memory_bytes[0]).epsilon(1e-9));
  // Peak memory: 1F1B's plus the deferred W's share, within the memory planner's estimate.
  const MemoryReport mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  for (size_t s = 0; s < zb.peak_memory_bytes.size(); ++s) {
    CAPTURE(s);
    CHECK(zb.peak_memory_bytes[s] >= one.peak_memory_bytes[s]);
    CHECK(zb.peak_memory_bytes[s] <= 1.02 * mem.stages[s].total());
  }
  // ZB-H2: about ZB-H1's step (one synchronised step keeps the fill), more in flight on the
  // early stages, and still within the planner's estimate.
  b.l.schedule = *FindSchedule("zb-h2");
  const StepReport h2 = b.Run();
  CHECK(h2.step_time_s == doctest::Approx(zb.step_time_s).epsilon(0.03));
  const MemoryReport mem2 = EstimateMemory(b.model, b.t, b.l, b.cluster);
  CHECK(h2.peak_memory_bytes[0] > zb.peak_memory_bytes[0]);
  for (size_t s = 0; s < h2.peak_memory_bytes.size(); ++s) {
    CAPTURE(s);
    CHECK(h2.peak_memory_bytes[s] <= 1.02 * mem2.stages[s].total());
  }
}

TEST_CASE("ZB-V and DualPipe-V: the fill alone with F = B = W, in a V; 1F1B's memory for ZB-V") {
  const PipelineSchedule& zbv = ScheduleOf(*FindSchedule("zb-v"));
  const PipelineSchedule& dpv = ScheduleOf(*FindSchedule("dualpipe-v"));
  const PipelineSchedule& one = ScheduleOf(kSchedule1F1B);
  for (const PipelineSchedule* s : {&zbv, &dpv}) {
    CHECK(s->v_shape());
    CHECK(s->splits_backward());
    CHECK(VirtualStageOf(*s, 4, 0, 1) == 7);  // stage 0 holds the first and the last chunk
    CHECK(VirtualStageOf(*s, 4, 3, 1) == 4);  // the turn is on the last stage
    CHECK(PlaceOf(*s, 4, 5).stage == 2);
    CHECK(PlaceOf(*s, 4, 5).chunk == 1);
  }
  CHECK(*FindSchedule("dualpipev") == *FindSchedule("dualpipe-v"));
  for (int p : {2, 4, 8, 16}) {
    for (int64_t m : {int64_t{2} * p, int64_t{4} * p}) {
      CAPTURE(p);
      CAPTURE(m);
      const PipelineShape v{p, 2, m};
      // In chunk units (a stage's F = 2): 1F1B takes 6m + 6(p-1); a V leaves only the fill of
      // p-1 chunk forwards.
      CHECK(UnitMakespan(one, PipelineShape{p, 1, m}, 2, 2, 2) == 6 * m + 6 * (p - 1));
      for (const PipelineSchedule* s : {&zbv, &dpv}) {
        CAPTURE(s->name());
        CHECK(UnitMakespan(*s, v, 1, 1, 1) == 6 * m + (p - 1));
      }
      for (int k = 0; k < p; ++k) {
        CAPTURE(k);
        // ZB-V: at most 1F1B's stage-0 peak, p micro-batches (2p chunks), on every stage.
        CHECK(PeakOpen(zbv.Order(v, k)) <= 2 * p);
        CHECK(zbv.InFlight(v, k) <= p);
        // DualPipe-V: one chunk more (the p+1 of DeepSeek-V3 Table 2, in half-size chunks).
        CHECK(PeakOpen(dpv.Order(v, k)) == 2 * p + 1);
        CHECK(dpv.InFlight(v, k) == doctest::Approx((2.0 * p + 1) / 2));
      }
    }
  }
  CHECK(dpv.Constraint({4, 2, 6}).find("at least 2*pp = 8 micro-batches") != std::string::npos);
  CHECK(dpv.Constraint({4, 2, 8}).empty());
}

TEST_CASE("ZB-V and DualPipe-V replayed: shorter than 1F1B and ZB-H1, the head on stage 0") {
  Bench b = FourStages();
  b.l.schedule = kSchedule1F1B;
  const StepReport one = b.Run();
  b.l.schedule = *FindSchedule("zb-h1");
  const StepReport h1 = b.Run();
  for (const char* name : {"zb-v", "dualpipe-v"}) {
    CAPTURE(name);
    b.l.schedule = *FindSchedule(name);
    const StepReport v = b.Run();
    CHECK(v.step_time_s < h1.step_time_s);
    CHECK(v.bubble_fraction < 0.5 * one.bubble_fraction);
    // The replay's peaks stay within the memory planner's estimate, and stage 0 holds the
    // embedding and the LM head.
    const MemoryReport mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
    for (size_t s = 0; s < v.peak_memory_bytes.size(); ++s) {
      CAPTURE(s);
      CHECK(v.peak_memory_bytes[s] <= 1.02 * mem.stages[s].total());
    }
    CHECK(mem.stages[0].params > mem.stages[3].params);
    CHECK(mem.stages[3].params == doctest::Approx(mem.stages[2].params));
  }
}

// DualPipe-V with its forwards and backwards one after another: what the F&B pairs save.
class UnpairedDualPipeV : public PipelineSchedule {
 public:
  const PipelineSchedule& dpv = ScheduleOf(*FindSchedule("dualpipe-v"));
  std::string_view name() const override { return "test-dualpipe-v-unpaired"; }
  bool v_shape() const override { return true; }
  bool splits_backward() const override { return true; }
  std::vector<Unit> Order(const PipelineShape& shape, int s) const override {
    std::vector<Unit> out = dpv.Order(shape, s);
    for (Unit& u : out) u.pair = false;
    return out;
  }
  double InFlight(const PipelineShape& shape, int s) const override {
    return dpv.InFlight(shape, s);
  }
};

TEST_CASE("DualPipe-V's F&B pairs hide the EP all-to-all behind the other micro-batch's compute") {
  // DeepSeek-V3 sec. 3.2.1: in the steady state a forward of one chunk and a backward of the
  // other run together; each one's dispatch and combine run beside the other's compute.
  const PipelineSchedule& dpv = ScheduleOf(*FindSchedule("dualpipe-v"));
  const int p = 4;
  const int64_t m = 16;
  for (int s = 0; s < p; ++s) {
    // Steps 4 and 5 of the published program pair two units per step-4 round and one per
    // step-5 round, except the last stage's first (the turn of the V waits for its forward).
    int pairs = 0;
    const std::vector<Unit> order = dpv.Order({p, 2, m}, s);
    for (size_t i = 0; i < order.size(); ++i) {
      if (!order[i].pair) continue;
      ++pairs;
      REQUIRE(order[i].phase == Phase::kF);
      REQUIRE(i + 1 < order.size());
      CHECK(order[i + 1].phase == Phase::kB);
      CHECK(order[i + 1].chunk != order[i].chunk);
    }
    CHECK(pairs == 2 * (m - 2 * p + s + 1) + (p - s - 1) - (s == p - 1 ? 1 : 0));
  }
  // A fine-grained MoE whose EP16 all-to-all crosses two H100 nodes, on four stages.
  Bench b(64);
  b.FineGrainedMoe(32);  // four layers per model chunk
  b.l.pp = p;
  b.l.ep = 16;
  b.l.dp = 16;
  b.t.global_batch = 16 * m;
  b.l.schedule = RegisterSchedule(std::make_unique<UnpairedDualPipeV>());
  REQUIRE(b.PlanError().empty());
  for (Granularity g : {Granularity::kCoarse, Granularity::kOp}) {
    CAPTURE(static_cast<int>(g));
    StepOptions o;
    o.granularity = g;
    b.l.schedule = *FindSchedule("test-dualpipe-v-unpaired");
    const StepReport apart = b.Run(o);
    b.l.schedule = *FindSchedule("dualpipe-v");
    const StepReport paired = b.Run(o);
    REQUIRE(apart.exposed.ep > 0);
    CHECK(paired.exposed.ep < 0.5 * apart.exposed.ep);
    CHECK(paired.step_time_s < apart.step_time_s);
    // The same work and the same order: memory peaks as before.
    for (size_t s = 0; s < paired.peak_memory_bytes.size(); ++s) {
      CHECK(paired.peak_memory_bytes[s] <= 1.001 * apart.peak_memory_bytes[s]);
    }
  }
}

TEST_CASE("DualPipe-V: odd layers per stage; stage 0's plan holds the LM head's logits briefly") {
  // A large vocabulary: the head's logits outweigh a layer's activations. Stage 0 holds the
  // embedding's chunk and the head's; the head's runs its backward right after its forward, so
  // its logits are held for a micro-batch or two, not for stage 0's whole in-flight count.
  Bench b = FourStages();
  b.model.vocab = 256000;
  b.model.layers = 30;  // 8 + 7 + 7 + 8 layers: odd stages split 4 + 3
  b.l.schedule = *FindSchedule("dualpipe-v");
  CHECK(b.PlanError().empty());
  const StepReport v = b.Run();
  const MemoryReport mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  for (size_t s = 0; s < v.peak_memory_bytes.size(); ++s) {
    CAPTURE(s);
    CHECK(v.peak_memory_bytes[s] <= 1.02 * mem.stages[s].total());
    CHECK(v.peak_memory_bytes[s] >= 0.90 * mem.stages[s].total());
  }
  b.l.schedule = *FindSchedule("zb-v");
  CHECK(b.PlanError().find("even number of layers per stage") != std::string::npos);
}

TEST_CASE("DualPipe: two directions, 2x parameters, p+1 chunks of activations, (p-2)/(3m) bubble") {
  // DeepSeek-V3 sec. 3.2.1 and the DualPipe repository's table: bubble (p/2-1)(F&B+B-3W),
  // parameters 2x, activations PP+1 (of a stage's, per micro-batch).
  const PipelineSchedule& dp = ScheduleOf(*FindSchedule("dualpipe"));
  CHECK(dp.bidirectional());
  for (auto [p, m] : {std::pair{4, 8}, {8, 20}, {16, 120}}) {
    CAPTURE(p);
    const PipelineShape shape{p, 2, m};
    REQUIRE(dp.Constraint(shape).empty());
    double peak = 0;
    for (int s = 0; s < p; ++s) {
      const std::vector<Unit> order = dp.Order(shape, s);
      // Each direction's m/2 micro-batches; the two halves of the ranks mirror each other.
      for (const Unit& u : order) CHECK(u.mb < m / 2);
      const std::vector<Unit> mirror = dp.Order(shape, p - 1 - s);
      REQUIRE(mirror.size() == order.size());
      for (size_t i = 0; i < order.size(); ++i) CHECK(mirror[i].chunk == 1 - order[i].chunk);
      peak = std::max(peak, PeakInFlight(order, 1, 0.0));
    }
    CHECK(peak == p + 1);
    // With F = B = W = 1 per chunk, F&B = 3 and the full B = 2: (p/2-1)(3+2-3) over 3m.
    CHECK(dp.IdealBubble(shape, {}) == doctest::Approx((p / 2.0 - 1) * 2 / (3.0 * m)));
  }
  CHECK(dp.Constraint({6, 2, 11}).find("even number of micro-batches") != std::string::npos);
  CHECK(dp.Constraint({5, 2, 20}).find("even pp") != std::string::npos);
  CHECK(dp.Constraint({4, 2, 6}).find("at least 2*pp = 8") != std::string::npos);
  // Replayed: each stage holds two stages' layers, both copies of the model; the bubble is a
  // fraction of 1F1B's and the step is shorter.
  Bench b = FourStages();
  b.l.schedule = kSchedule1F1B;
  const StepReport one = b.Run();
  const MemoryReport one_mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  b.l.schedule = *FindSchedule("dualpipe");
  REQUIRE(b.PlanError().empty());
  const StepReport two = b.Run();
  const MemoryReport two_mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  for (int s = 1; s < 3; ++s) {
    CHECK(two_mem.stages[s].params == doctest::Approx(2 * one_mem.stages[s].params));
  }
  CHECK(two_mem.stages[0].params == doctest::Approx(two_mem.stages[3].params));
  CHECK(two.bubble_fraction < 0.5 * one.bubble_fraction);
  CHECK(two.step_time_s < one.step_time_s);
  for (size_t s = 0; s < two.peak_memory_bytes.size(); ++s) {
    CHECK(two.peak_memory_bytes[s] <= 1.02 * two_mem.stages[s].total());
  }
  b.t.global_batch = 18;  // 9 micro-batches
  CHECK(b.PlanError().find("even number of micro-batches") != std::string::npos);
}

TEST_CASE("V schedules refuse virtual_stages, odd layers per stage and (DualPipe-V) m < 2p") {
  Bench b = FourStages();
  b.l.schedule = *FindSchedule("zb-v");
  b.l.virtual_stages = 2;
  CHECK(b.PlanError().find("leave virtual_stages out") != std::string::npos);
  b.l.virtual_stages = 1;
  b.l.stage_layers = {b.model.layers / 4 + 1, b.model.layers / 4 - 1, b.model.layers / 4,
                      b.model.layers / 4};
  if (b.model.layers / 4 % 2 == 0) {
    CHECK(b.PlanError().find("give every stage an even count") != std::string::npos);
  }
  b.l.stage_layers.clear();
  b.l.schedule = *FindSchedule("dualpipe-v");
  b.t.global_batch = 8;  // 4 micro-batches on 4 stages
  CHECK(b.PlanError().find("at least 2*pp = 8 micro-batches") != std::string::npos);
}

}  // namespace
}  // namespace parasim
