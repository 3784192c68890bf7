#include "tests/invariants/checks.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "sim/json.h"
#include "sim/parse_units.h"
#include "strategies/memory.h"
#include "strategies/sweep.h"
#include "tools/diff.h"
#include "tools/text.h"
#include "tools/verbs/registry.h"
#include "tools/verbs/step_json.h"

namespace parasim::testing {
namespace {

void Add(Violations* out, std::string check, std::string detail) {
  out->push_back({std::move(check), std::move(detail)});
}

// Every number of a JSON tree finite and not negative (none of `run --json`'s may be).
void CheckNumbers(const Json& j, const std::string& path, Violations* out) {
  switch (j.kind()) {
    case Json::Kind::kNumber:
      if (!std::isfinite(j.number()) || j.number() < 0) {
        Add(out, "no NaN, infinity or negative number", fmt::format("{} = {}", path, j.number()));
      }
      return;
    case Json::Kind::kArray:
      for (size_t i = 0; i < j.items().size(); ++i) {
        CheckNumbers(j.items()[i], fmt::format("{}[{}]", path, i), out);
      }
      return;
    case Json::Kind::kObject:
      for (const auto& [k, v] : j.fields()) CheckNumbers(v, path + "." + k, out);
      return;
    default:
      return;
  }
}

// The length of the union of `iv` within [0, end), picoseconds: sorted and swept here, apart
// from the summary's own interval code.
int64_t Covered(std::vector<std::pair<int64_t, int64_t>> iv, int64_t end) {
  std::sort(iv.begin(), iv.end());
  int64_t total = 0, reach = 0;
  for (auto [a, b] : iv) {
    a = std::max({a, reach, int64_t{0}});
    b = std::min(b, end);
    if (b > a) {
      total += b - a;
      reach = b;
    }
  }
  return total;
}

// Each stage's idle time in the timeline: the step less the union of its rank's tasks (the
// pipeline sends it makes aside) and the transfers it receives.
std::vector<int64_t> IdlePerStage(const LoweredStep& low, const sim::Timeline& tl) {
  const sim::Program& p = low.program;
  const int64_t end = tl.makespan.picoseconds();
  std::vector<std::vector<std::pair<int64_t, int64_t>>> busy(low.stages);
  auto stage_of = [&](uint32_t rank) {
    for (int s = 0; s < low.stages; ++s) {
      if (low.stage_rank[s] == rank) return s;
    }
    return -1;
  };
  for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
    const int s = stage_of(p.stream_rank(p.stream(t)));
    if (s < 0 || p.category(t) == static_cast<uint8_t>(TaskCat::kPp)) continue;
    busy[s].push_back({tl.start[t].picoseconds(), tl.end[t].picoseconds()});
  }
  for (size_t i = 0; i < low.pp_flows.size(); ++i) {
    const int s = stage_of(low.pp_receiver[i]);
    const sim::TaskId t = low.pp_flows[i];
    if (s >= 0) busy[s].push_back({tl.start[t].picoseconds(), tl.end[t].picoseconds()});
  }
  std::vector<int64_t> idle;
  for (int s = 0; s < low.stages; ++s) idle.push_back(end - Covered(busy[s], end));
  return idle;
}

StatusOr<StepReport> Replay(const Scenario& s) {
  return SimulateStep(s.model, s.training, s.layout, s.cluster, {});
}

// How much longer a step on a faster GPU or fabric may take: flows that share a link share its
// bandwidth, so an earlier start can slow one on the critical path (a list-scheduling anomaly,
// R. L. Graham, "Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 17(2),
// 1969). Drawn by the plan fuzzer (2026-12-02): MI300X, gpt3-13b in 4 layers, TP1 PP2
// DP8 CP2, ZeRO-2, zb-v, 32 GPUs on 100 Gb/s Omni-Path, +0.0049% on the GPU 1.25x faster, where
// one of stage 0's per-micro-batch gradient reduce-scatters, back to back on the NIC, shared it
// 0.34 ms longer with another data-parallel transfer that now started earlier, and the chain
// ended 0.10 ms later. The same pair replayed op by op (`run --ops`) is 0.10% faster on the
// faster GPU, every rank (`--full`) 0.27%. A pricing error shows in a stream's compute (checked
// below), not only in the step.
constexpr double kSharingAnomaly = 1e-3;

double WorstPeak(const StepReport& r) {
  return r.peak_memory_bytes.empty()
             ? 0
             : *std::max_element(r.peak_memory_bytes.begin(), r.peak_memory_bytes.end());
}

}  // namespace

void CheckStep(const Scenario& s, const StepReport& r, const LoweredStep& low,
               const sim::Timeline& tl, Violations* out) {
  const Json j = RunJson(s, r);
  CheckNumbers(j, "run", out);
  if (r.mfu > 1 + 1e-12 || r.hfu > 1 + 1e-12) {
    Add(out, "MFU and HFU at most 1", fmt::format("mfu {}, hfu {}", r.mfu, r.hfu));
  }
  if (!(r.step_time_s > 0)) Add(out, "a step takes time", fmt::format("{}", r.step_time_s));
  double sum = 0;
  for (double part : r.parts_s) sum += part;
  if (std::fabs(sum - r.step_time_s) > 1e-9 * r.step_time_s + 1e-11) {
    Add(out, "the step's parts add up to the step",
        fmt::format("parts {} s, step {} s (stage {})", sum, r.step_time_s, r.busiest_stage));
  }
  const std::vector<int64_t> idle = IdlePerStage(low, tl);
  const double step_ps = static_cast<double>(tl.makespan.picoseconds());
  if (r.bubble_fraction_per_stage.size() != idle.size()) {
    Add(out, "a bubble per stage",
        fmt::format("{} bubbles, {} stages", r.bubble_fraction_per_stage.size(), idle.size()));
    return;
  }
  double mean = 0;
  for (size_t k = 0; k < idle.size(); ++k) {
    const double seen = static_cast<double>(idle[k]) / step_ps;
    mean += r.bubble_fraction_per_stage[k] / static_cast<double>(idle.size());
    if (std::fabs(seen - r.bubble_fraction_per_stage[k]) > 1e-12) {
      Add(out, "the bubble per stage is the timeline's idle time",
          fmt::format("stage {}: reported {}, timeline {} ({} ps idle of {})", k,
                      r.bubble_fraction_per_stage[k], seen, idle[k], step_ps));
    }
  }
  if (std::fabs(mean - r.bubble_fraction) > 1e-12 || r.bubble_fraction > 1 ||
      r.ideal_bubble_fraction > 1) {
    Add(out, "the bubble is the stages' mean, at most 1",
        fmt::format("bubble {}, mean {}, ideal {}", r.bubble_fraction, mean,
                    r.ideal_bubble_fraction));
  }
  // Same input, same bytes.
  StatusOr<StepReport> again = Replay(s);
  if (!again.ok() || RunJson(s, *again).Dump() != j.Dump()) {
    Add(out, "same input, same bytes", again.ok() ? "the JSON differs" : again.status().message());
  }
}

void CheckMonotone(const Scenario& s, const StepReport& r, const LoweredStep& low,
                   Violations* out) {
  auto slower = [&](const char* what, const Scenario& faster) {
    StatusOr<StepReport> f = Replay(faster);
    if (!f.ok()) {
      Add(out, what, "refused: " + f.status().message());
    } else if (f->step_time_s > r.step_time_s * (1 + kSharingAnomaly)) {
      Add(out, what,
          fmt::format("{} s against {} s (+{:.4f}%)", f->step_time_s, r.step_time_s,
                      100 * (f->step_time_s / r.step_time_s - 1)));
    }
  };
  Scenario gpu = s;
  for (FlopRate& p : gpu.cluster.gpu.peak) p = FlopRate(p.flops_per_second() * 1.25);
  gpu.cluster.gpu.hbm_bandwidth =
      Bandwidth(gpu.cluster.gpu.hbm_bandwidth.bytes_per_second() * 1.25);
  slower("a faster GPU is never slower", gpu);
  // What the step may not have, its compute must: on the faster GPU, each stream's compute of
  // each kind (forward, backward, recompute, optimizer, the host's issue...) priced no longer,
  // to a picosecond a task. Collectives' tasks are left out: one holds what outlasts the
  // compute it hides behind (layer_lowering.cc, Beside), which grows as that compute shrinks,
  // and appears where there was none.
  StatusOr<LoweredStep> fast_low =
      LowerStep(gpu.model, gpu.training, gpu.layout, gpu.cluster, StepOptions{});
  if (!fast_low.ok()) {
    Add(out, "a faster GPU prices no compute slower", "refused: " + fast_low.status().message());
  } else if (fast_low->program.num_streams() != low.program.num_streams()) {
    Add(out, "a faster GPU prices no compute slower",
        fmt::format("{} streams lowered against {}", fast_low->program.num_streams(),
                    low.program.num_streams()));
  } else {
    // Per stream and kind: the priced picoseconds and the tasks.
    using Totals = std::map<std::pair<sim::StreamId, uint8_t>, std::pair<int64_t, int64_t>>;
    auto totals = [](const LoweredStep& l) {
      Totals out;
      const sim::Program& p = l.program;
      for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
        switch (static_cast<TaskCat>(p.category(t))) {
          case TaskCat::kTp:
          case TaskCat::kCp:
          case TaskCat::kEp:
          case TaskCat::kPp:
          case TaskCat::kDp:
            continue;
          default:
            break;
        }
        auto& [ps, n] = out[{p.stream(t), p.category(t)}];
        ps += l.costs.ComputeDuration(p.cost_key(t)).picoseconds();
        ++n;
      }
      return out;
    };
    const Totals was = totals(low), now = totals(*fast_low);
    for (const auto& [key, w] : was) {
      auto it = now.find(key);
      const int64_t ps = it == now.end() ? 0 : it->second.first;
      if (ps > w.first + w.second) {
        Add(out, "a faster GPU prices no compute slower",
            fmt::format("stream {} ({}): {} ps against {} ps", low.program.stream_name(key.first),
                        TaskCatName(static_cast<TaskCat>(key.second)), ps, w.first));
        break;
      }
    }
  }
  Scenario fabric = s;
  for (FabricSpec* f : {&fabric.cluster.intra, &fabric.cluster.inter}) {
    f->bandwidth = Bandwidth(f->bandwidth.bytes_per_second() * 1.25);
    f->latency = Duration::Seconds(f->latency.seconds() * 0.8);
  }
  slower("a faster fabric is never slower", fabric);
  if (s.layout.overlap_tp != Layout::TpOverlap::kNone && s.layout.tp > 1) {
    // Blocking on every TP collective (SP's backward re-gather too) is never faster, within
    // 1%: with ZeRO 3 the TP collectives' timing moves where the parameter gathers start on
    // the shared fabric (drawn cases of 0.01%, 0.15%, and 0.52% with the experts' TP gathers
    // beside the sort by local expert: Mixtral 8x22B tp4 ep4 cp2 zero3 on PCIe nodes); an SP
    // re-gather left out under blocking had made it 1-8% faster.
    Scenario blocking = s;
    blocking.layout.overlap_tp = Layout::TpOverlap::kNone;
    StatusOr<StepReport> b = Replay(blocking);
    if (b.ok() && b->step_time_s * 1.01 < r.step_time_s) {
      Add(out, "overlapping TP collectives is never slower than blocking on them",
          fmt::format("{} s overlapped against {} s blocking", r.step_time_s, b->step_time_s));
    }
  }
  Scenario roomy = s;
  roomy.cluster.gpu.memory = Bytes(s.cluster.gpu.memory.bytes() * 2);
  StatusOr<StepReport> m = Replay(roomy);
  const bool planned = EstimateMemory(s.model, s.training, s.layout, s.cluster).fits;
  const bool planned_roomy =
      EstimateMemory(roomy.model, roomy.training, roomy.layout, roomy.cluster).fits;
  if (!m.ok() || (r.fits && !m->fits) || (planned && !planned_roomy)) {
    Add(out, "more memory never fits less",
        m.ok() ? fmt::format("replay fits {} -> {}, planner {} -> {}", r.fits, m->fits, planned,
                             planned_roomy)
               : m.status().message());
  }
  Scenario none = s, full = s;
  none.training.recompute = RecomputeKind::kNone;
  full.training.recompute = RecomputeKind::kFull;
  none.training.recompute_layers = full.training.recompute_layers = -1;
  StatusOr<StepReport> rn = Replay(none), rf = Replay(full);
  if (rn.ok() && rf.ok() && WorstPeak(*rf) > WorstPeak(*rn) * (1 + 1e-9)) {
    Add(out, "full recompute never needs more memory than none",
        fmt::format("full {} GiB, none {} GiB", Bytes(WorstPeak(*rf)).gib(),
                    Bytes(WorstPeak(*rn)).gib()));
  }
}

namespace {

// The number at `key` of a JSON object (0 when absent).
double At(const Json& j, const std::string& key) {
  for (const auto& [k, v] : j.fields()) {
    if (k == key && v.kind() == Json::Kind::kNumber) return v.number();
  }
  return 0;
}
const Json* Field(const Json& j, const std::string& key) {
  for (const auto& [k, v] : j.fields()) {
    if (k == key) return &v;
  }
  return nullptr;
}

// The run verb, run in this process on a scenario's text.
StatusOr<std::unique_ptr<VerbResult>> RunVerbOn(const std::string& yaml) {
  for (const Verb& v : Verbs()) {
    if (v.name != "run") continue;
    std::vector<FlagValue> values = v.Defaults();
    for (size_t i = 0; i < v.flags.size(); ++i) {
      if (v.flags[i].positional) values[i] = Document{"drawn.yaml", yaml};
    }
    return v.run(values, VerbContext{});
  }
  return InvalidArgument("no run verb");
}

}  // namespace

void CheckRunViews(const std::string& yaml, const Scenario& s, Violations* out) {
  StatusOr<std::unique_ptr<VerbResult>> res = RunVerbOn(yaml);
  if (!res.ok()) {
    Add(out, "run accepts what the loader accepts", res.status().message());
    return;
  }
  const std::string text = (*res)->ToText();
  const Json j = (*res)->ToJson();
  std::vector<std::string> said = {
      "step time        " + Seconds(At(j, "step_time_s")),
      Human(At(j, "tokens_per_s")) + " tokens/s", fmt::format("MFU {:.1f}%", 100 * At(j, "mfu")),
      fmt::format("HFU {:.1f}%", 100 * At(j, "hfu")),
      fmt::format(": {}\n", Field(j, "fits")->bool_value() ? "fits" : "DOES NOT FIT")};
  double exposed = 0;
  for (const auto& [k, v] : Field(j, "exposed_comm_s")->fields()) exposed += v.number();
  said.push_back("exposed comm     " + Seconds(exposed) + " per step");
  if (s.layout.pp > 1) {
    said.push_back(
        fmt::format("pipeline bubble  {:.1f}% of the step, mean over stages (per stage "
                    "{:.1f}%",
                    100 * At(j, "bubble_fraction"),
                    100 * Field(j, "bubble_fraction_per_stage")->items()[0].number()));
    said.push_back(fmt::format("ideal {:.1f}% (", 100 * At(j, "ideal_bubble_fraction")));
  }
  for (const std::string& x : said) {
    if (text.find(x) == std::string::npos) {
      Add(out, "the text says what the JSON holds", fmt::format("'{}' not in:\n{}", x, text));
    }
  }
  // A diff against the same layout on a faster GPU: each side's parts add up to its step.
  Scenario fast = s;
  for (FlopRate& p : fast.cluster.gpu.peak) p = FlopRate(p.flops_per_second() * 1.25);
  StatusOr<StepReport> ra = Replay(s), rb = Replay(fast);
  if (!ra.ok() || !rb.ok()) return;
  const StepDiff d = DiffSteps(s, *ra, fast, *rb);
  double a = 0, b = 0;
  for (const DiffRow& row : d.rows) {
    if (row.step_part) {
      a += row.a;
      b += row.b;
    }
  }
  if (std::fabs(a - ra->step_time_s) > 1e-9 * ra->step_time_s ||
      std::fabs(b - rb->step_time_s) > 1e-9 * rb->step_time_s) {
    Add(out, "diff's parts add up to each step",
        fmt::format("A {} of {} s, B {} of {} s", a, ra->step_time_s, b, rb->step_time_s));
  }
}

namespace {

// The sweep checked: TP auto, PP 1 or 2, DP what is left, ZeRO 0/1, no or full recompute,
// micro-batch 1 or 2, SP on and off, the global batch up to the scenario's; the top three.
Scenario Swept(const Scenario& s) {
  Scenario out = s;
  SweepSpec spec;
  auto axis = [](std::vector<std::string> v) {
    SweepAxis a;
    a.values = std::move(v);
    return a;
  };
  SweepAxis any;
  any.is_auto = true;
  spec.axes = {{"tp", any},
               {"pp", axis({"1", "2"})},
               {"dp", any},
               {"zero", axis({"0", "1"})},
               {"recompute", axis({"none", "full"})},
               {"micro_batch", axis({"1", "2"})},
               {"sp", axis({"false", "true"})}};
  spec.global_batch_max = s.training.global_batch;
  spec.top = 3;
  spec.where = "drawn.yaml:1:1";
  out.sweep = spec;
  out.dp_auto = true;
  return out;
}

std::vector<std::string> Keys(const std::vector<SweepEntry>& v) {
  std::vector<std::string> k;
  for (const SweepEntry& e : v) k.push_back(e.key);
  return k;
}

std::vector<std::string> FrontKeys(const SweepOutcome& r) {
  std::vector<std::string> k;
  for (size_t i : r.pareto) k.push_back(r.ranked[i].key);
  return k;
}

// Whether `a` is as fast and as low as `b` on the front's axes, one of the two strictly.
bool Dominates(const FrontPoint& a, const FrontPoint& b) {
  return a.tokens >= b.tokens && a.other <= b.other && (a.tokens > b.tokens || a.other < b.other);
}

// The front as printed: no point of it dominated by a ranked layout's printed point, no two of
// it printed alike, and every ranked layout off it dominated or printed alike with one on it.
void CheckFront(const SweepOutcome& r, Violations* out) {
  std::vector<bool> on(r.ranked.size(), false);
  std::set<std::pair<double, double>> printed;
  for (size_t i : r.pareto) {
    on[i] = true;
    const FrontPoint x = PrintedFrontOf(r.ranked[i], false);
    if (!printed.insert({x.tokens, x.other}).second) {
      Add(out, "the Pareto front is non-dominated as printed",
          r.ranked[i].key + " printed alike with another point of the front");
    }
    for (const SweepEntry& e : r.ranked) {
      const FrontPoint y = PrintedFrontOf(e, false);
      if (Dominates(y, x)) {
        Add(out, "the Pareto front is non-dominated as printed",
            fmt::format("{} ({}, {}) under {} ({}, {})", r.ranked[i].key, x.tokens, x.other, e.key,
                        y.tokens, y.other));
      }
    }
  }
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    if (on[i]) continue;
    const FrontPoint x = PrintedFrontOf(r.ranked[i], false);
    bool covered = printed.count({x.tokens, x.other}) > 0;
    for (size_t f : r.pareto) {
      covered = covered || Dominates(PrintedFrontOf(r.ranked[f], false), x);
    }
    if (!covered) {
      Add(out, "the Pareto front is complete",
          fmt::format("{} ({}, {}) is off the front and not dominated", r.ranked[i].key, x.tokens,
                      x.other));
    }
  }
}

}  // namespace

void CheckSweep(const Scenario& base, Violations* out) {
  const Scenario s = Swept(base);
  SweepOptions one, two, all;
  two.jobs = 2;
  all.exhaustive = true;
  StatusOr<SweepOutcome> r1 = RunSweep(s, one), r2 = RunSweep(s, two), rx = RunSweep(s, all);
  if (!r1.ok() || !r2.ok() || !rx.ok()) {
    Add(out, "a sweep of valid layouts answers",
        (!r1.ok()   ? r1
         : !r2.ok() ? r2
                    : rx)
            .status()
            .message());
    return;
  }
  if (Keys(r1->ranked) != Keys(r2->ranked) || FrontKeys(*r1) != FrontKeys(*r2)) {
    Add(out, "same input, same answer (one or two threads)", "the ranking or the front differs");
  }
  for (size_t i = 0; i < r1->ranked.size() && i < r1->top_reports.size(); ++i) {
    if (RunJson(WithLayout(s, r1->ranked[i]), r1->top_reports[i]).Dump() !=
        RunJson(WithLayout(s, r2->ranked[i]), r2->top_reports[i]).Dump()) {
      Add(out, "same input, same bytes (one or two threads)", r1->ranked[i].key);
    }
  }
  CheckFront(*r1, out);
  if (!rx->ranked.empty()) {
    const Objective o = s.sweep->objective;
    const SweepEntry* best = r1->ranked.empty() ? nullptr : &r1->ranked[0];
    for (const SweepEntry& e : rx->ranked) {
      if (best == nullptr || RankedValue(e, o) > RankedValue(*best, o)) {
        Add(out, "the sweep's best is at least as good as any layout replayed",
            fmt::format("{} beats the best {}", e.key, best ? best->key : "(none)"));
        break;
      }
    }
    if (best && best->key != rx->ranked[0].key) {
      Add(out, "pruning keeps the best", best->key + " vs exhaustive " + rx->ranked[0].key);
    }
    if (FrontKeys(*r1) != FrontKeys(*rx)) {
      Add(out, "pruning keeps the Pareto front", "the front differs from the exhaustive one");
    }
  }
  Scenario roomy = s;
  roomy.cluster.gpu.memory = Bytes(s.cluster.gpu.memory.bytes() * 2);
  StatusOr<SweepOutcome> rm = RunSweep(roomy, all);
  if (!rm.ok()) return;
  const std::vector<std::string> before = Keys(rx->ranked), after = Keys(rm->ranked);
  const std::set<std::string> fits(after.begin(), after.end());
  for (const std::string& k : before) {
    if (fits.count(k) == 0) {
      Add(out, "more memory never fits fewer layouts", k + " fits in x1 but not in x2 memory");
    }
  }
}

}  // namespace parasim::testing
