#include "tools/commands.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "hardware/fit.h"
#include "hardware/measurements.h"
#include "models/model_spec.h"
#include "scenarios/fit_runs.h"
#include "scenarios/scenario.h"
#include "scenarios/validate.h"
#include "sim/io.h"
#include "sim/json.h"
#include "sim/parse_units.h"
#include "sim/trace.h"
#include "sim/units.h"
#include "strategies/goodput.h"
#include "strategies/layout_format.h"
#include "strategies/memory.h"
#include "strategies/robustness.h"
#include "strategies/scale.h"
#include "strategies/schedule.h"
#include "strategies/step.h"
#include "strategies/sweep.h"
#include "tools/diff.h"
#include "tools/report.h"
#include "tools/trace_compare.h"

namespace parasim {
namespace {

// Worker threads (--jobs, default all cores) and the grid cap of the verbs that sweep.
SweepOptions SweepOptionsOf(const CommonOptions& opt) {
  SweepOptions so;
  so.jobs =
      opt.jobs > 0 ? opt.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  so.max_layouts = opt.max_layouts;
  so.processes = opt.processes;
  return so;
}

// The document a verb reads: the file, or the text the Python module handed over.
YamlInput InputOf(const CommonOptions& opt) {
  return opt.text ? YamlInput(opt.file, *opt.text) : YamlInput(opt.file);
}

// --json output: stdout, or the caller's string (the Python module).
void EmitJson(const CommonOptions& opt, const Json& j) {
  if (opt.json_out != nullptr) {
    *opt.json_out = j.Dump();
    return;
  }
  fmt::print("{}\n", j.Dump());
}

Json LayoutJson(const Scenario& s) {
  const Layout& l = s.layout;
  Json j = Json::Object();
  j.Set("tp", l.tp).Set("pp", l.pp).Set("dp", l.dp).Set("cp", l.cp).Set("ep", l.ep);
  if (l.expert_tp() != l.tp) j.Set("etp", l.expert_tp());
  if (l.split_embedding || l.split_loss) {
    Json a = Json::Array();
    if (l.split_embedding) a.Push(std::string("embedding"));
    if (l.split_loss) a.Push(std::string("loss"));
    j.Set("account_for", a);
  }
  j.Set("sp", l.sp).Set("zero", l.zero).Set("schedule", std::string(ScheduleName(l.schedule)));
  j.Set("virtual_stages", l.virtual_stages);
  if (l.grad_reduce != Layout::GradReduce::kAuto) {
    j.Set("grad_reduce", std::string(GradReduceName(l.grad_reduce)));
  }
  if (l.cp_comm != Layout::CpComm::kRing) j.Set("cp_comm", std::string(CpCommName(l.cp_comm)));
  if (l.zero == 3 && !l.zero3_copies) j.Set("zero3_copies", false);
  j.Set("micro_batch", s.training.micro_batch).Set("global_batch", s.training.global_batch);
  j.Set("recompute", std::string(RecomputeName(s.training.recompute)));
  if (s.training.recompute != RecomputeKind::kNone && s.training.recompute_layers >= 0) {
    j.Set("recompute_layers", s.training.recompute_layers);
  }
  if (s.training.precision != Dtype::kBf16) {
    j.Set("precision", std::string(DtypeName(s.training.precision)));
  }
  if (s.training.precision == Dtype::kFp8 && s.training.fp8_recipe != Fp8Recipe::kTensorwise) {
    j.Set("fp8_recipe", std::string(Fp8RecipeName(s.training.fp8_recipe)));
  }
  return j;
}

}  // namespace

namespace {

std::string Seconds(double s) { return FormatDuration(Duration::Seconds(s)); }

std::string Human(double x) {
  if (x >= 1e9) return fmt::format("{:.2f}B", x / 1e9);
  if (x >= 1e6) return fmt::format("{:.2f}M", x / 1e6);
  if (x >= 1e3) return fmt::format("{:.1f}k", x / 1e3);
  return fmt::format("{:.0f}", x);
}

Json GoodputJson(const GoodputReport& g) {
  const CheckpointPlan& ck = g.inputs.checkpoint;
  Json c = Json::Object();
  c.Set("bytes", ck.bytes).Set("bytes_per_gpu", ck.bytes_per_gpu);
  c.Set("mode", g.inputs.async ? "async" : "sync");
  c.Set("write_s", ck.write_s).Set("read_s", ck.read_s).Set("stall_s", ck.stall_s);
  c.Set("interval_s", ck.interval_s).Set("young_daly", ck.young_daly);
  Json j = Json::Object();
  j.Set("failures_per_day", g.failures_per_day).Set("mtbf_s", g.mtbf_s);
  j.Set("wall_s", g.runs.wall.mean);
  j.Set("interruptions_p10", g.runs.interruptions.p10);
  j.Set("interruptions_p90", g.runs.interruptions.p90);
  j.Set("planned_interruptions", g.runs.planned);
  j.Set("restart_s", g.inputs.restart_s);
  j.Set("lost_work_s", g.runs.lost_s).Set("checkpoint_stall_s", g.runs.stall_s);
  j.Set("downtime_s", g.runs.down_s);
  j.Set("analytic_effective_training_time", g.analytic_effective_time);
  j.Set("step_time_p50_s", g.steps.p50_s).Set("step_time_mean_s", g.steps.mean_s);
  j.Set("runs", g.runs.runs).Set("checkpoint", c);
  return j;
}

Json RunJson(const Scenario& s, const StepReport& r, const GoodputReport* g = nullptr) {
  Json j = Json::Object();
  j.Set("scenario", s.name).Set("gpus", s.cluster.gpus());
  j.Set("step_time_s", r.step_time_s).Set("tokens_per_s", r.tokens_per_s);
  j.Set("tflops_per_gpu", r.tflops_per_gpu).Set("hw_tflops_per_gpu", r.hw_tflops_per_gpu);
  j.Set("mfu", r.mfu).Set("hfu", r.hfu);
  j.Set("bubble_fraction", r.bubble_fraction);
  j.Set("ideal_bubble_fraction", r.ideal_bubble_fraction);
  j.Set("micro_batches", r.micro_batches);
  j.Set("fits", r.fits);
  Json peaks = Json::Array();
  for (double b : r.peak_memory_bytes) peaks.Push(b);
  j.Set("peak_memory_bytes", peaks).Set("memory_capacity_bytes", r.capacity_bytes);
  Json e = Json::Object();
  e.Set("tp", r.exposed.tp).Set("cp", r.exposed.cp).Set("ep", r.exposed.ep);
  e.Set("pp", r.exposed.pp).Set("dp", r.exposed.dp);
  j.Set("exposed_comm_s", e);
  Json comp = Json::Array();
  for (double c : r.stage_compute_s) comp.Push(c);
  j.Set("stage_compute_s", comp);
  j.Set("model_flops_per_step", r.model_flops_per_step);
  j.Set("hw_flops_per_step", r.hw_flops_per_step);
  if (s.training.tokens > 0) {
    j.Set("time_to_train_s", r.time_to_train_s).Set("gpu_hours", r.gpu_hours);
    if (s.cluster.gpu_hour_cost > 0) j.Set("cost", r.cost);
  }
  if (g) {
    if (s.training.tokens > 0) {
      j.Set("ideal_time_to_train_s", g->ideal_time_to_train_s);
      j.Set("time_to_train_p10_s", g->time_to_train_p10_s);
      j.Set("time_to_train_p90_s", g->time_to_train_p90_s);
    }
    j.Set("goodput", g->goodput).Set("expected_interruptions", g->runs.interruptions.mean);
    j.Set("effective_training_time", g->runs.effective_training_time);
    j.Set("step_time_p99_s", g->steps.p99_s).Set("reliability", GoodputJson(*g));
  }
  j.Set("critical_path", r.critical_path);
  if (!s.cluster.calibration.empty()) {
    Json cal = Json::Array();
    for (const auto& c : s.cluster.calibrated) cal.Push(c);
    j.Set("calibration", s.cluster.calibration).Set("calibrated", cal);
  }
  j.Set("layout", LayoutJson(s));
  Json w = Json::Array();
  for (const auto& x : r.warnings) w.Push(x);
  j.Set("warnings", w);
  return j;
}

void PrintGoodput(const Scenario& s, const StepReport& r, const GoodputReport& g) {
  const CheckpointPlan& ck = g.inputs.checkpoint;
  const double days = g.runs.wall.mean / 86400;
  fmt::print(
      "  goodput          {:.1f}% of the failure-free rate; effective training time {:.1f}% "
      "(closed form {:.1f}%)\n",
      100 * g.goodput, 100 * g.runs.effective_training_time, 100 * g.analytic_effective_time);
  fmt::print(
      "  interruptions    {:.0f} unexpected in {:.1f} days (P10-P90 {:.0f}-{:.0f}; {:.2f} per "
      "day, MTBF {}), {:.0f} planned; each costs {} to restart\n",
      g.runs.interruptions.mean, days, g.runs.interruptions.p10, g.runs.interruptions.p90,
      g.failures_per_day, Seconds(g.mtbf_s), g.runs.planned, Seconds(g.inputs.restart_s));
  fmt::print(
      "  checkpoints      {} ({} per GPU), {} write of {} every {} of training{}; lost work "
      "{:.1f} h, stalls {:.1f} h, downtime {:.1f} h\n",
      FormatBytes(Bytes(ck.bytes)), FormatBytes(Bytes(ck.bytes_per_gpu)),
      g.inputs.async ? "async" : "sync", Seconds(ck.write_s), Seconds(ck.interval_s),
      ck.young_daly ? " (Young/Daly)" : "", g.runs.lost_s / 3600, g.runs.stall_s / 3600,
      g.runs.down_s / 3600);
  if (s.reliability.straggler > 0) {
    fmt::print(
        "  stragglers       step P50 {}, P99 {}, mean {} (per-GPU speed spread {:.1f}% over {} "
        "GPUs; failure-free {})\n",
        Seconds(g.steps.p50_s), Seconds(g.steps.p99_s), Seconds(g.steps.mean_s),
        100 * s.reliability.straggler, s.cluster.gpus(), Seconds(r.step_time_s));
  }
}

void PrintRun(const Scenario& s, const StepReport& r, const GoodputReport* g = nullptr) {
  const Layout& l = s.layout;
  const double gpus = static_cast<double>(s.cluster.gpus());
  fmt::print("{}: {} on {} x {}\n", s.name.empty() ? s.file : s.name, s.model.id, s.cluster.gpus(),
             s.cluster.gpu.name);
  fmt::print("layout: {}\n\n", FormatLayout(l, s.training, LayoutStyle::kSentence));
  fmt::print("  step time        {}\n", Seconds(r.step_time_s));
  fmt::print("  throughput       {} tokens/s ({} tokens/s per GPU)\n", Human(r.tokens_per_s),
             Human(r.tokens_per_s / gpus));
  fmt::print("  model FLOPs      {:.1f} TFLOP/s per GPU, MFU {:.1f}%  (excludes recompute)\n",
             r.tflops_per_gpu, 100 * r.mfu);
  fmt::print("  hardware FLOPs   {:.1f} TFLOP/s per GPU, HFU {:.1f}%  (includes recompute)\n",
             r.hw_tflops_per_gpu, 100 * r.hfu);
  if (l.pp > 1) {
    const PipelineSchedule& s = ScheduleOf(l.schedule);
    const UnitTimes& t = r.unit_times;
    const std::string times =
        s.ideal_takes_unit_times()
            ? fmt::format(" with F {}, B {}, W {}", Seconds(t.f), Seconds(t.b), Seconds(t.w))
            : "";
    fmt::print("  pipeline bubble  {:.1f}% of compute in the replay (ideal {}{}: {:.1f}%)\n",
               100 * r.bubble_fraction, s.IdealBubbleFormula({l.pp, ChunksOf(l), r.micro_batches}),
               times, 100 * r.ideal_bubble_fraction);
  }
  const ExposedComm& e = r.exposed;
  fmt::print(
      "  exposed comm     {} per step = {:.1f}% (tp {}, cp {}, ep {}, pp {}, dp {}; time the GPU "
      "waits on it)\n",
      Seconds(e.total()), r.step_time_s > 0 ? 100 * e.total() / r.step_time_s : 0.0, Seconds(e.tp),
      Seconds(e.cp), Seconds(e.ep), Seconds(e.pp), Seconds(e.dp));
  fmt::print("  memory per GPU   ");
  for (size_t i = 0; i < r.peak_memory_bytes.size(); ++i) {
    if (i == 4 && r.peak_memory_bytes.size() > 6) {
      fmt::print("... ");
      i = r.peak_memory_bytes.size() - 2;
      continue;
    }
    fmt::print("{}{}", i > 0 ? ", " : "", FormatBytes(Bytes(r.peak_memory_bytes[i])));
  }
  fmt::print(" peak per stage of {}: {}\n", FormatBytes(Bytes(r.capacity_bytes)),
             r.fits ? "fits" : "DOES NOT FIT");
  if (g) PrintGoodput(s, r, *g);
  if (s.training.tokens > 0) {
    // GPU-hours per trillion tokens: the unit published whole-run costs come in (DeepSeek-V3's
    // 180K H800 GPU-hours, arXiv 2412.19437 Sec. 1).
    fmt::print(
        "  time to train    {:.3g} tokens in {:.1f} days{}, {} GPU-hours ({} per 10^12 tokens){}\n",
        s.training.tokens, r.time_to_train_s / 86400,
        g ? fmt::format(" (P10-P90 {:.1f}-{:.1f}; failure-free {:.1f})",
                        g->time_to_train_p10_s / 86400, g->time_to_train_p90_s / 86400,
                        g->ideal_time_to_train_s / 86400)
          : "",
        Human(r.gpu_hours), Human(r.gpu_hours / s.training.tokens * 1e12),
        s.cluster.gpu_hour_cost > 0 ? fmt::format(", cost {}", Human(r.cost)) : "");
  }
  if (!r.critical_path.empty()) fmt::print("  critical path    {}\n", r.critical_path);
  if (!s.cluster.calibration.empty()) {
    fmt::print("  calibration      {}: {}\n", s.cluster.calibration,
               s.cluster.calibrated.empty()
                   ? std::string("no value replaced")
                   : fmt::format("{}", fmt::join(s.cluster.calibrated, ", ")));
  }
  if (r.warnings.empty()) {
    fmt::print("  warnings         none\n");
  } else {
    for (size_t i = 0; i < r.warnings.size(); ++i) {
      fmt::print("  {}  {}\n", i == 0 ? "warnings       " : "               ", r.warnings[i]);
    }
  }
}

// Memory a layout leaves free on its cluster's GPUs, GiB.
double FreeGib(const Scenario& s, const SweepEntry& e) {
  return ClusterOf(s, e).gpu.memory.gib() - Bytes(e.peak_memory_bytes).gib();
}

// How many of a sweep's ranked layouts after the first are within kRankTie of it by the
// objective (cost a token, or GPU-seconds a token: the inverse of tokens a second kept), and
// which of those ties leaves the most memory free. Closer than that, the published runs parasim
// is validated against do not order two layouts (scenarios/validate.h). None for the memory
// objective, which ranks by memory.
struct TiedWithBest {
  size_t count = 0;
  size_t roomiest = 0;  // index into ranked
};

TiedWithBest TiesWithBest(const Scenario& s, const std::vector<SweepEntry>& ranked) {
  TiedWithBest t;
  if (ranked.empty() || (s.sweep && s.sweep->objective == Objective::kMemory)) return t;
  const double best = ObjectiveCost(s, ranked[0]);
  for (size_t i = 1; i < ranked.size(); ++i) {
    if (ObjectiveCost(s, ranked[i]) / best - 1 > kRankTie) continue;
    ++t.count;
    if (FreeGib(s, ranked[i]) > FreeGib(s, ranked[t.roomiest])) t.roomiest = i;
  }
  return t;
}

// sweep --robust: how the leaders rank under each swing of the cost model.
template <typename Named>
Json RobustnessJson(const SweepOutcome& r, const Robustness& rob, const Named& named) {
  Json o = Json::Object();
  o.Set("leaders", static_cast<int64_t>(rob.leaders)).Set("held", static_cast<int64_t>(rob.held));
  o.Set("swung", static_cast<int64_t>(rob.swings.size()));
  Json swings = Json::Array();
  for (const SwingOutcome& w : rob.swings) {
    const size_t first = rob.ranked[w.first];
    Json x = Json::Object();
    x.Set("parameter", std::string(SwingKey(w.swing.kind))).Set("factor", w.swing.factor);
    if (!w.swing.gpu.empty()) x.Set("gpu", w.swing.gpu);
    x.Set("applied", w.applied).Set("first_rank", static_cast<int64_t>(first + 1));
    x.Set("first_layout", named(r.ranked[first])).Set("behind", w.behind);
    x.Set("holds", w.holds).Set("step_time_s", w.step_s[0]);
    x.Set("measure", std::string(SwingMeasure(w.swing.kind)));
    swings.Push(x);
  }
  o.Set("swings", swings);
  return o;
}

template <typename Named>
void PrintRobustness(const SweepOutcome& r, const Robustness& rob, const Named& named) {
  if (rob.leaders == 0) {
    fmt::print("\nRobustness: nothing to swing (the memory objective, or a single layout).\n");
    return;
  }
  const size_t extra = rob.leaders - rob.top;
  fmt::print(
      "\nRobustness: the {} leaders{} replayed with one of the cost model's least certain "
      "parameters swung at a time, by the spread of the measurements behind it:\n",
      rob.top, extra > 0 ? fmt::format(" and {} more clusters' best", extra) : "");
  for (const SwingOutcome& w : rob.swings) {
    const size_t first = rob.ranked[w.first];
    const std::string swing = SwingText(w.swing);
    std::string verdict;
    if (w.first == 0) {
      verdict = "#1 stays first";
    } else if (w.holds) {
      verdict = fmt::format("#{} first, #1 within {:.1f}% (a tie)", first + 1, 100 * w.behind);
    } else {
      verdict = fmt::format("#{} first, {:.1f}% ahead of #1: {}", first + 1, 100 * w.behind,
                            named(r.ranked[first]));
    }
    fmt::print("  {:<32} {:<38} {}\n", swing, w.applied, verdict);
  }
  fmt::print("#1 stays first, or within {:.0f}% of the first, under {} of {} swings{}\n",
             100 * kRankTie, rob.held, rob.swings.size(),
             rob.held == static_cast<int>(rob.swings.size())
                 ? ": the answer does not hang on them."
                 : ". Before choosing, measure what it hangs on:");
  std::vector<std::string> told;
  for (const SwingOutcome& w : rob.swings) {
    const std::string label = SwingLabel(w.swing);
    if (w.holds || std::find(told.begin(), told.end(), label) != told.end()) continue;
    told.push_back(label);
    fmt::print("  {}: {}\n", label, SwingMeasure(w.swing.kind));
  }
}

}  // namespace

Status SweepCommand(const CommonOptions& opt) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenario(InputOf(opt), opt.sets, cat));
  SweepOptions so = SweepOptionsOf(opt);
  so.out_csv = opt.out;
  so.resume = opt.resume;
  so.exhaustive = opt.exhaustive;
  so.batch = opt.batch;
  const bool primary = opt.processes == nullptr || opt.processes->rank() == 0;
  const bool tty = isatty(fileno(stderr)) != 0;
  std::mutex mu;
  const auto start = std::chrono::steady_clock::now();
  if (tty && primary) {
    so.progress = [&](int64_t done, int64_t total) {
      if (done % 64 != 0 && done != total) return;
      std::lock_guard<std::mutex> lock(mu);
      const double el =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double eta = done > 0 ? el / done * (total - done) : 0;
      const int width = 30;
      const int fill = total > 0 ? static_cast<int>(width * done / total) : width;
      fmt::print(stderr, "\r[{}{}] {}/{} layouts, ETA {:.0f} s ", std::string(fill, '#'),
                 std::string(width - fill, '.'), done, total, eta);
      if (done == total) fmt::print(stderr, "\r{}\r", std::string(80, ' '));
    };
  }
  PARASIM_ASSIGN_OR_RETURN(SweepOutcome r, RunSweep(s, so));
  if (!primary) return Status::Ok();  // rank 0 prints
  std::optional<Robustness> robust;
  if (opt.robust) {
    const auto t0 = std::chrono::steady_clock::now();
    PARASIM_ASSIGN_OR_RETURN(robust, SweepRobustness(s, r, RobustnessOptions::Jobs(so.jobs)));
    fmt::print(stderr, "robust_s: {:.3f}\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  fmt::print(stderr,
             "grid_points: {}\nvalid_layouts: {}\nmemory_rejected: {}\npruned: {}\nreplayed: {}\n"
             "elapsed_s: {:.3f}\nvalid_layouts_per_second: {:.0f}\nreplays_per_second: {:.0f}\n",
             r.grid_points, r.valid_layouts, r.memory_rejected, r.pruned, r.replayed, r.elapsed_s,
             r.valid_layouts_per_second, r.replays_per_second);
  fmt::print(stderr, "phases_s: enumerate {:.3f}, screen {:.3f}, replay {:.3f}, report {:.3f}\n",
             r.enumerate_s, r.screen_s, r.replay_s, r.report_s);
  const size_t top = r.top_reports.size();
  // A co-design sweep names each layout's cluster and model and prices its tokens.
  const bool codesign = s.sweep && !s.sweep->hardware.empty();
  const bool priced = SweepPriced(s);
  auto named = [&](const SweepEntry& e) {
    const std::string layout = FormatLayout(e.layout, e.training, LayoutStyle::kShort);
    return codesign ? s.sweep->hardware[e.hardware].label + ": " + layout : layout;
  };
  // A co-design sweep's answer per cluster: its best layout (ranked is best first), or none.
  std::vector<const SweepEntry*> best_on(codesign ? s.sweep->hardware.size() : 0, nullptr);
  for (const SweepEntry& e : r.ranked) {
    if (codesign && best_on[e.hardware] == nullptr) best_on[e.hardware] = &e;
  }
  auto train_s = [&](const SweepEntry& e) { return s.training.tokens / KeptTokensPerS(e); };
  // "1.20M tokens/s, costs 0.445 per million tokens, 9.7 days to train"
  auto priced_text = [&](const SweepEntry& e) {
    return fmt::format(
        "{:>9} tokens/s, {} per million tokens{}", Human(KeptTokensPerS(e)),
        priced ? fmt::format("costs {:.4g}", 1e6 * CostPerToken(e))
               : fmt::format("{:.4g} GPU-hours", 1e6 * CostPerToken(e)),
        s.training.tokens > 0 ? fmt::format(", {} to train", Seconds(train_s(e))) : "");
  };
  if (opt.json) {
    Json j = Json::Object();
    j.Set("scenario", s.name).Set("grid_points", r.grid_points);
    j.Set("valid_layouts", r.valid_layouts).Set("memory_rejected", r.memory_rejected);
    j.Set("pruned", r.pruned).Set("replayed", r.replayed).Set("feasible", r.feasible);
    j.Set("elapsed_s", r.elapsed_s).Set("valid_layouts_per_second", r.valid_layouts_per_second);
    j.Set("replays_per_second", r.replays_per_second);
    Json res = Json::Array();
    for (size_t i = 0; i < top; ++i) {
      Json o = RunJson(WithLayout(s, r.ranked[i]), r.top_reports[i]);
      if (r.ranked[i].goodput != 1) {
        o.Set("goodput", r.ranked[i].goodput);
        if (s.training.tokens > 0) {
          o.Set("time_to_train_s", r.top_reports[i].time_to_train_s / r.ranked[i].goodput);
        }
      }
      o.Set("rank", static_cast<int64_t>(i + 1)).Set("bottleneck", Bottleneck(r.top_reports[i]));
      if (codesign) {
        o.Set("hardware", s.sweep->hardware[r.ranked[i].hardware].label);
        o.Set(priced ? "cost_per_million_tokens" : "gpu_hours_per_million_tokens",
              1e6 * CostPerToken(r.ranked[i]));
      }
      res.Push(o);
    }
    j.Set("results", res);
    const TiedWithBest ties = TiesWithBest(s, r.ranked);
    j.Set("within_tie_of_best", static_cast<int64_t>(ties.count)).Set("tie_band", kRankTie);
    if (robust) j.Set("robustness", RobustnessJson(r, *robust, named));
    Json pareto = Json::Array();
    for (size_t i : r.pareto) pareto.Push(named(r.ranked[i]));
    j.Set("pareto", pareto);
    if (codesign) {
      Json clusters = Json::Array();
      for (size_t h = 0; h < best_on.size(); ++h) {
        Json c = Json::Object();
        c.Set("hardware", s.sweep->hardware[h].label);
        c.Set("gpus", s.sweep->hardware[h].cluster.gpus());
        c.Set("fits", best_on[h] != nullptr);
        if (const SweepEntry* e = best_on[h]) {
          c.Set("layout", FormatLayout(e->layout, e->training, LayoutStyle::kShort));
          c.Set("tokens_per_s", KeptTokensPerS(*e));
          c.Set(priced ? "cost_per_million_tokens" : "gpu_hours_per_million_tokens",
                1e6 * CostPerToken(*e));
          if (s.training.tokens > 0) c.Set("time_to_train_s", train_s(*e));
        }
        clusters.Push(c);
      }
      j.Set("clusters", clusters);
    }
    EmitJson(opt, j);
    return Status::Ok();
  }
  const std::string over = codesign ? fmt::format("{} clusters", s.sweep->hardware.size())
                                    : fmt::format("{} x {}", s.cluster.gpus(), s.cluster.gpu.id);
  fmt::print(
      "{}: {} grid points ({}): {} valid layouts, {} over memory by the planner, {} "
      "replayed, {} fit\n\n",
      s.name.empty() ? s.file : s.name, r.grid_points, over, r.valid_layouts, r.memory_rejected,
      r.replayed, r.feasible);
  if (r.ranked.empty()) {
    fmt::print("No layout of the sweep fits in memory. Try ZeRO 3, full recompute or more GPUs.\n");
    return Status::Ok();
  }
  auto cap = [&](const SweepEntry& e) { return ClusterOf(s, e).gpu.memory.gib(); };
  size_t width = 40;
  for (size_t i = 0; i < top; ++i) width = std::max(width, named(r.ranked[i]).size());
  fmt::print("{:>3}  {:<{}} {:>10} {:>9} {:>6} {:>7} {:>13} {:>12}  {}\n", "#", "layout", width,
             "step", "tokens/s", "MFU", "bubble", "exposed comm", "peak memory", "bottleneck");
  for (size_t i = 0; i < top; ++i) {
    const StepReport& rep = r.top_reports[i];
    const SweepEntry& e = r.ranked[i];
    const double peak =
        Bytes(*std::max_element(rep.peak_memory_bytes.begin(), rep.peak_memory_bytes.end())).gib();
    fmt::print("{:>3}  {:<{}} {:>10} {:>9} {:>5.1f}% {:>6.1f}% {:>13} {:>12}  {}\n", i + 1,
               named(e), width, Seconds(rep.step_time_s), Human(rep.tokens_per_s), 100 * rep.mfu,
               100 * rep.bubble_fraction,
               fmt::format("{} {:.0f}%", Seconds(rep.exposed.total()),
                           100 * rep.exposed.total() / rep.step_time_s),
               fmt::format("{:.1f}/{:.0f} GiB", peak, cap(e)), Bottleneck(rep));
  }
  if (const TiedWithBest ties = TiesWithBest(s, r.ranked); ties.count > 0) {
    fmt::print(
        "\n{} more layout{} within {:.0f}% of #1 by the objective, closer than the published runs "
        "parasim is checked against can tell apart (validate's tie band): among them, #{} leaves "
        "the most memory free ({:.1f} GiB).\n",
        ties.count, ties.count == 1 ? " is" : "s are", 100 * kRankTie, ties.roomiest + 1,
        FreeGib(s, r.ranked[ties.roomiest]));
  }
  if (robust) PrintRobustness(r, *robust, named);
  if (codesign) {
    fmt::print("\nBest layout on each cluster:\n");
    for (size_t h = 0; h < best_on.size(); ++h) {
      const SweepEntry* e = best_on[h];
      const std::string& label = s.sweep->hardware[h].label;
      if (e == nullptr) {
        fmt::print("  {:<{}} no layout of the sweep fits\n", label, width / 2);
        continue;
      }
      fmt::print("  {:<{}} {:<28} {}\n", label, width / 2,
                 FormatLayout(e->layout, e->training, LayoutStyle::kShort), priced_text(*e));
    }
    fmt::print("\nPareto front (throughput vs cost per token), fastest first:\n");
  } else {
    fmt::print("\nPareto front (throughput vs memory headroom), fastest first:\n");
  }
  for (size_t k = 0; k < r.pareto.size() && k < 10; ++k) {
    const size_t i = r.pareto[k];
    const SweepEntry& e = r.ranked[i];
    if (!codesign) {
      fmt::print("  #{:<5} {:<40} {:>9} tokens/s, {:.1f} GiB free\n", i + 1, named(e),
                 Human(e.tokens_per_s), FreeGib(s, e));
      continue;
    }
    fmt::print("  #{:<5} {:<{}} {}\n", i + 1, named(e), width, priced_text(e));
  }
  if (top > 1) {
    fmt::print("\nWhy the runners-up lose to #1:\n");
    const SweepEntry& first = r.ranked[0];
    for (size_t i = 1; i < top; ++i) {
      const SweepEntry& e = r.ranked[i];
      if (codesign && e.hardware != first.hardware) {
        // Another cluster: the step's parts do not compare, its price and speed do.
        fmt::print("  #{:<3} another cluster ({}): {:+.1f}% cost per token, {:+.1f}% throughput\n",
                   i + 1, s.sweep->hardware[e.hardware].label,
                   100 * (CostPerToken(e) / CostPerToken(first) - 1),
                   100 * (KeptTokensPerS(e) / KeptTokensPerS(first) - 1));
        continue;
      }
      fmt::print("  #{:<3} {}\n", i + 1, WhyBehind(e, first));
    }
  }
  const SweepEntry& best = r.ranked[0];
  if (best.training.global_batch != r.base_global_batch) {
    const double k = static_cast<double>(best.training.global_batch) / r.base_global_batch;
    fmt::print(
        "\nThe best layout uses global batch {} (scenario: {}): scale the learning rate by {:.2f} "
        "(linear scaling rule) and warm up over 5-10% of the steps",
        best.training.global_batch, r.base_global_batch, k);
    if (s.training.tokens > 0) {
      const double steps = s.training.tokens / (best.training.global_batch * s.training.seq_len);
      fmt::print(" ({:.0f}-{:.0f} of {:.0f} steps)", 0.05 * steps, 0.10 * steps, steps);
    }
    fmt::print(".\n");
  }
  return Status::Ok();
}

StatusOr<std::vector<int64_t>> ParseGpuList(const std::string& text) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  auto bad = [&](const std::string& why) {
    return InvalidArgument(
        fmt::format("--gpus={}:1:1: error: {}; expected counts such as "
                    "8,16,64 or 8,16,...,4096",
                    text, why));
  };
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    size_t c = text.find(',', pos);
    parts.push_back(text.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  bool ellipsis = false;
  for (const auto& p : parts) {
    if (p == "...") {
      if (ellipsis || out.size() < 2) return bad("'...' needs two counts before it");
      ellipsis = true;
      continue;
    }
    int64_t v = 0;
    try {
      size_t used = 0;
      v = std::stoll(p, &used);
      if (used != p.size()) return bad(fmt::format("'{}' is not a count", p));
    } catch (const std::exception&) {
      return bad(fmt::format("'{}' is not a count", p));
    }
    if (v < 1 || v > 100'000'000) return bad(fmt::format("{} GPUs is out of range", v));
    if (ellipsis && out.size() >= 2 && v > out.back()) {
      const int64_t a = out[out.size() - 2], b = out.back();
      const bool geometric = b % a == 0 && b / a >= 2;
      for (int64_t x = geometric ? b * (b / a) : b + (b - a); x < v && out.size() < 100000;
           x = geometric ? x * (b / a) : x + (b - a)) {
        out.push_back(x);
      }
      ellipsis = false;
    }
    out.push_back(v);
  }
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i] <= out[i - 1]) return bad("counts must increase");
  }
  return out;
}

Status ScaleCommand(const CommonOptions& opt) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenario(InputOf(opt), opt.sets, cat));
  std::vector<int64_t> gpus = opt.gpus;
  if (gpus.empty()) {
    // From one node up to the scenario's cluster, doubling.
    for (int64_t n = s.cluster.gpus_per_node; n < s.cluster.gpus(); n *= 2) gpus.push_back(n);
    gpus.push_back(s.cluster.gpus());
  }
  SweepOptions so = SweepOptionsOf(opt);
  PARASIM_ASSIGN_OR_RETURN(ScaleOutcome r, RunScale(s, gpus, opt.weak, so));
  double best_days = 0;
  for (const auto& pt : r.points) {
    if (pt.found && pt.gpus == s.cluster.gpus() && s.training.tokens > 0) {
      best_days = pt.report.time_to_train_s / 86400;
    }
  }
  Advice adv = Advise(s, best_days);
  if (opt.json) {
    Json pts = Json::Array();
    for (const auto& pt : r.points) {
      Json o = Json::Object();
      o.Set("gpus", pt.gpus).Set("found", pt.found);
      if (pt.found) {
        o.Set("step_time_s", pt.report.step_time_s).Set("tokens_per_s", pt.report.tokens_per_s);
        o.Set("speedup", pt.speedup).Set("efficiency", pt.efficiency);
        o.Set("karp_flatt", pt.karp_flatt).Set("mfu", pt.report.mfu);
        o.Set("goodput", pt.goodput).Set("goodput_efficiency", pt.goodput_efficiency);
        o.Set("layout", LayoutJson(WithLayout(s, pt.best)));
      } else {
        o.Set("reason", pt.reason);
      }
      pts.Push(o);
    }
    Json a = Json::Object();
    a.Set("fits_one_gpu", adv.fits_one_gpu).Set("one_gpu_peak_bytes", adv.one_gpu_peak_bytes);
    if (adv.one_gpu_days > 0) a.Set("one_gpu_days", adv.one_gpu_days);
    a.Set("verdict", adv.verdict);
    Json mins = Json::Object();
    for (const auto& m : adv.minimums) mins.Set(m.strategy, m.gpus);
    a.Set("minimum_gpus", mins);
    Json j = Json::Object();
    j.Set("scenario", s.name).Set("weak", r.weak).Set("points", pts);
    j.Set("parallel_fraction", r.parallel_fraction).Set("advice", a);
    EmitJson(opt, j);
    return Status::Ok();
  }
  fmt::print("{}: {} scaling ({}), best layout at each size\n\n", s.name.empty() ? s.file : s.name,
             r.weak ? "weak" : "strong",
             r.weak ? fmt::format("{:.2f} sequences per GPU",
                                  static_cast<double>(s.training.global_batch) / s.cluster.gpus())
                    : fmt::format("global batch {}", s.training.global_batch));
  fmt::print("{:>6}  {:<40} {:>10} {:>9} {:>8} {:>10} {:>10} {:>6} {:>8} {:>10}\n", "GPUs",
             "best layout", "step", "tokens/s", "speedup", "efficiency", "Karp-Flatt", "MFU",
             "goodput", "with it");
  for (const auto& pt : r.points) {
    if (!pt.found) {
      fmt::print("{:>6}  {}\n", pt.gpus, pt.reason);
      continue;
    }
    fmt::print(
        "{:>6}  {:<40} {:>10} {:>9} {:>7.2f}x {:>9.1f}% {:>10.4f} {:>5.1f}% {:>7.1f}% {:>9.1f}%\n",
        pt.gpus, FormatLayout(pt.best.layout, pt.best.training, LayoutStyle::kShort),
        Seconds(pt.report.step_time_s), Human(pt.report.tokens_per_s), pt.speedup,
        100 * pt.efficiency, pt.karp_flatt, 100 * pt.report.mfu, 100 * pt.goodput,
        100 * pt.goodput_efficiency);
  }
  const double p = r.parallel_fraction;
  fmt::print("\nAmdahl fit (least squares over the points): parallel fraction p = {:.4f}", p);
  if (p < 1) fmt::print(", so at most {:.0f}x over the first point", 1 / (1 - p));
  fmt::print(
      "\nKarp-Flatt: a serial fraction that grows with the GPU count means overhead "
      "(communication, bubbles) grows too, not just a fixed serial part.\nGoodput: the "
      "throughput kept through failures, checkpoint stalls and restarts at that size (closed "
      "form, `reliability` block or its defaults); \"with it\" is the efficiency after it.\n");
  fmt::print("\nAdvice\n  {}\n  Fewest GPUs that hold the model ({} per GPU, {}):\n", adv.verdict,
             FormatBytes(s.cluster.gpu.memory), s.cluster.gpu.id);
  for (const auto& m : adv.minimums) {
    fmt::print("    {:<18} {}\n", m.strategy,
               m.gpus > 0 ? fmt::format("{:>6} GPUs  ({})", m.gpus, m.layout)
                          : std::string("  never (it replicates what does not fit)"));
  }
  return Status::Ok();
}

namespace {

// What the ranking of a file's cases says, a line each (none when no two cases train the same
// model at the same sequence length).
std::vector<std::string> RankingLines(const Ranking& r) {
  std::vector<std::string> out;
  if (r.scored + r.ties == 0) return out;
  const std::string ties =
      r.ties > 0 ? fmt::format("; {} more within {:.0f}%, where either order is right", r.ties,
                               100 * kRankTie)
                 : "";
  out.push_back(
      fmt::format("Ranking: {} of {} pairs of cases of the same model ordered as "
                  "measured (GPU-seconds a sequence){}.",
                  r.ordered, r.scored, ties));
  for (const RankedPair& p : r.misordered) {
    out.push_back(fmt::format("Out of order: {} against {}: measured {:.3f}x, predicted {:.3f}x.",
                              p.a, p.b, p.measured_ratio, p.predicted_ratio));
  }
  return out;
}

// A wall-clock case's prediction is the step over the goodput: say so beside its layout.
std::string ThroughGoodput(const ValidationCase& c) {
  return c.wall_clock ? fmt::format(" (wall clock: step / goodput {:.1f}%)", 100 * c.goodput)
                      : std::string();
}

}  // namespace

Status ValidateCommand(const CommonOptions& opt) {
  SweepOptions so = SweepOptionsOf(opt);
  PARASIM_ASSIGN_OR_RETURN(ValidationReport r, Validate(InputOf(opt), opt.sets, so, opt.robust));
  if (opt.json) {
    Json cases = Json::Array();
    for (const auto& c : r.cases) {
      Json o = Json::Object();
      // SCENARIO.md: a failed case has `error` null and a `status` naming why.
      o.Set("name", c.name).Set("status", c.ok ? std::string("ok") : c.failure);
      o.Set("measured_s", c.measured_s);
      if (c.ok) {
        o.Set("predicted_s", c.predicted_s).Set("error", c.error).Set("layout", c.layout);
        if (c.wall_clock) o.Set("basis", std::string("wall_clock")).Set("goodput", c.goodput);
        if (c.swing_hi_s > 0) {
          Json range = Json::Array();
          range.Push(c.swing_lo_s).Push(c.swing_hi_s);
          o.Set("swing_range_s", range).Set("swing_lo", c.swing_lo).Set("swing_hi", c.swing_hi);
          o.Set("within_swings", c.within_swings());
        }
      } else {
        o.Set("predicted_s", Json()).Set("error", Json());
      }
      cases.Push(o);
    }
    Json misordered = Json::Array();
    for (const RankedPair& p : r.ranking.misordered) {
      Json o = Json::Object();
      o.Set("a", p.a).Set("b", p.b).Set("measured_ratio", p.measured_ratio);
      misordered.Push(o.Set("predicted_ratio", p.predicted_ratio));
    }
    Json ranking = Json::Object();
    ranking.Set("scored", r.ranking.scored).Set("ordered", r.ranking.ordered);
    ranking.Set("ties", r.ranking.ties).Set("tie_band", kRankTie).Set("misordered", misordered);
    Json j = Json::Object();
    j.Set("source", r.source).Set("cases", cases).Set("mape", r.mape);
    j.Set("max_abs_error", r.max_abs_error).Set("failed", r.failed).Set("ranking", ranking);
    if (opt.robust) {
      Json sw = Json::Object();
      sw.Set("swung", r.swung).Set("within", r.within_swings);
      j.Set("swings", sw);
    }
    EmitJson(opt, j);
    return Status::Ok();
  }
  const std::string failed =
      r.failed > 0 ? fmt::format("; {} case(s) FAILED (no prediction)", r.failed) : "";
  if (opt.markdown) {
    fmt::print("Source: {}\n\n", r.source);
    fmt::print("| case | predicted | measured | error | layout predicted |\n");
    fmt::print("| --- | ---: | ---: | ---: | --- |\n");
    for (const auto& c : r.cases) {
      if (!c.ok) {
        fmt::print("| {} | failed | {:.3f} s | | {} |\n", c.name, c.measured_s, c.failure);
        continue;
      }
      fmt::print("| {} | {:.3f} s | {:.3f} s | {:+.1f}% | {}{} |\n", c.name, c.predicted_s,
                 c.measured_s, 100 * c.error, c.layout, ThroughGoodput(c));
    }
    const std::vector<std::string> ranking = RankingLines(r.ranking);
    for (size_t i = 0; i < ranking.size(); ++i) {
      // The headline a paragraph, the pairs out of order a list under it.
      fmt::print("{}{}{}\n", i <= 1 ? "\n" : "", i == 0 ? "" : "- ", ranking[i]);
    }
    // The summary stays the last line: scripts read it there.
    fmt::print("\nMAPE {:.2f}%, max |error| {:.2f}% over {} cases{}.\n", 100 * r.mape,
               100 * r.max_abs_error, r.cases.size() - r.failed, failed);
    return Status::Ok();
  }
  fmt::print("{}\n{}\n\n", opt.file, r.source);
  fmt::print("{:<24} {:>12} {:>12} {:>8}  {}\n", "case", "predicted", "measured", "error",
             "layout (best of the case's sweep)");
  for (const auto& c : r.cases) {
    if (!c.ok) {
      fmt::print("{:<24} {:>12} {:>12} {:>8}  {}\n", c.name, "FAILED", Seconds(c.measured_s), "",
                 c.failure);
      continue;
    }
    fmt::print("{:<24} {:>12} {:>12} {:>+7.1f}%  {}{}\n", c.name, Seconds(c.predicted_s),
               Seconds(c.measured_s), 100 * c.error, c.layout, ThroughGoodput(c));
  }
  for (const std::string& line : RankingLines(r.ranking)) fmt::print("{}\n", line);
  if (opt.robust) {
    fmt::print(
        "Swings (--robust): the measured step lies within the range one swing of the cost "
        "model's uncertain rates spans for {} of {} cases.\n",
        r.within_swings, r.swung);
    for (const auto& c : r.cases) {
      if (c.swing_hi_s <= 0 || c.within_swings()) continue;
      fmt::print("  {}: measured {}, swings {} ({}) to {} ({})\n", c.name, Seconds(c.measured_s),
                 Seconds(c.swing_lo_s), c.swing_lo, Seconds(c.swing_hi_s), c.swing_hi);
    }
  }
  // The summary stays the last line: scripts read it there.
  fmt::print("MAPE {:.2f}%, max |error| {:.2f}% over {} cases{}\n", 100 * r.mape,
             100 * r.max_abs_error, r.cases.size() - r.failed, failed);
  return Status::Ok();
}

namespace {

Status FitRunsCommand(const CommonOptions& opt) {
  SweepOptions so = SweepOptionsOf(opt);
  PARASIM_ASSIGN_OR_RETURN(RunsFit f, FitRuns(opt.runs, opt.sets, so, opt.params));
  const std::string text = FormatCalibrationProfile(f.profile);
  if (!opt.out.empty()) PARASIM_RETURN_IF_ERROR(WriteFileAtomic(opt.out, text));
  if (opt.json) {
    Json params = Json::Array();
    for (const RunsParam& q : f.params) {
      Json o = Json::Object();
      o.Set("name", q.name).Set("start", q.start).Set("fitted", q.fitted).Set("lo", q.lo);
      o.Set("hi", q.hi).Set("unit", q.unit);
      params.Push(o);
    }
    Json cases = Json::Array();
    for (const RunsCase& c : f.cases) {
      Json o = Json::Object();
      o.Set("name", c.name).Set("measured_s", c.measured_s).Set("before_s", c.before_s);
      o.Set("after_s", c.after_s).Set("held_out_s", c.held_out_s).Set("layout", c.layout);
      cases.Push(o);
    }
    Json skipped = Json::Array();
    for (const auto& x : f.skipped) skipped.Push(x);
    Json j = Json::Object();
    j.Set("gpu", f.gpu).Set("params", params).Set("cases", cases).Set("skipped", skipped);
    j.Set("mape_before", f.mape_before).Set("mape_after", f.mape_after);
    j.Set("mape_held_out", f.mape_held_out).Set("profile", text);
    EmitJson(opt, j);
    return Status::Ok();
  }
  fmt::print("fit --runs {} ({}, {} cases)\n\n", fmt::join(opt.runs, " --runs "), f.gpu,
             f.cases.size());
  fmt::print("{:<26} {:>10} {:>10}  bounds\n", "parameter", "start", "fitted");
  for (const RunsParam& q : f.params) {
    fmt::print("{:<26} {:>10.4g} {:>10.4g}  [{:g}, {:g}]{}\n", q.name, q.start, q.fitted, q.lo,
               q.hi, q.unit.empty() ? "" : " " + q.unit);
  }
  fmt::print("\n{:<40} {:>10} {:>9} {:>9} {:>9}\n", "case", "measured", "before", "after",
             "held out");
  for (const RunsCase& c : f.cases) {
    auto err = [&](double p) { return fmt::format("{:+.1f}%", 100 * (p / c.measured_s - 1)); };
    fmt::print("{:<40} {:>10} {:>9} {:>9} {:>9}\n", c.name, Seconds(c.measured_s), err(c.before_s),
               err(c.after_s), err(c.held_out_s));
  }
  for (const auto& x : f.skipped) fmt::print("skipped: {}\n", x);
  fmt::print("\nMAPE {:.2f}% before, {:.2f}% fitted, {:.2f}% leave-one-out\n", 100 * f.mape_before,
             100 * f.mape_after, 100 * f.mape_held_out);
  if (!opt.out.empty()) fmt::print("wrote {}\n", opt.out);
  return Status::Ok();
}

}  // namespace

Status FitCommand(const CommonOptions& opt) {
  if (!opt.runs.empty()) {
    if (!opt.inputs.empty()) {
      return InvalidArgument(
          "--runs:1:1: error: fit takes measurement files or --runs FILE, not both");
    }
    return FitRunsCommand(opt);
  }
  if (opt.inputs.empty()) {
    return InvalidArgument(
        "fit:1:1: error: expected measurement files (calibrate output, nccl-tests logs) or "
        "--runs FILE (measured step times)");
  }
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  std::vector<Measurements> ms;
  if (!opt.op.empty()) {
    if (auto c = ParseNcclTestsProgram(opt.op); !c.ok()) {
      return InvalidArgument(fmt::format("--op={}:1:6: error: {}", opt.op, c.status().message()));
    }
  }
  for (const auto& f : opt.inputs) {
    PARASIM_ASSIGN_OR_RETURN(Measurements m, LoadMeasurements(f, opt.op));
    ms.push_back(std::move(m));
  }
  std::string gpu_id = opt.gpu;
  for (const auto& m : ms) {
    if (gpu_id.empty()) gpu_id = m.gpu;
  }
  // A log that names its device (nccl-tests' rank lines, calibrate's `device`) names the GPU.
  for (const auto& m : ms) {
    const GpuSpec* named = cat.hardware.FindGpuByDevice(m.device);
    if (gpu_id.empty() && named) gpu_id = named->id;
  }
  if (gpu_id.empty()) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: which GPU was measured? pass --gpu ID (one of: {})",
                    opt.inputs.front(), fmt::join(cat.hardware.GpuIds(), ", ")));
  }
  const GpuSpec* gpu = cat.hardware.FindGpu(gpu_id);
  if (!gpu) {
    return InvalidArgument(fmt::format("--gpu={}:1:7: error: unknown GPU '{}'; expected one of: {}",
                                       gpu_id, gpu_id, fmt::join(cat.hardware.GpuIds(), ", ")));
  }
  // The fabrics measured: given, or those of the server the catalog lists for this GPU.
  const std::string intra = !opt.intra.empty() ? opt.intra : gpu->server.intra;
  const std::string inter = !opt.inter.empty() ? opt.inter : gpu->server.inter;
  if (intra.empty() || inter.empty()) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: the catalog lists no server for '{}'; pass --intra and --inter "
                    "(one of: {})",
                    opt.inputs.front(), gpu_id, fmt::join(cat.hardware.FabricIds(), ", ")));
  }
  ClusterSpec c;
  c.gpu = *gpu;
  for (auto [id, spec, flag] :
       {std::tuple{intra, &c.intra, "--intra"}, {inter, &c.inter, "--inter"}}) {
    const FabricSpec* f = cat.hardware.FindFabric(id);
    if (!f) {
      return InvalidArgument(
          fmt::format("{}={}:1:{}: error: unknown fabric '{}'; expected one of: {}", flag, id,
                      std::string(flag).size() + 2, id, fmt::join(cat.hardware.FabricIds(), ", ")));
    }
    *spec = *f;
  }
  c.gpus_per_node = std::max(1, gpu->server.gpus);
  PARASIM_ASSIGN_OR_RETURN(FitResult r, FitMeasurements(ms, c));
  const std::string text = FormatCalibrationProfile(r.profile);
  if (!opt.out.empty()) PARASIM_RETURN_IF_ERROR(WriteFileAtomic(opt.out, text));
  if (opt.json) {
    Json fams = Json::Array();
    for (const auto& f : r.families) {
      Json o = Json::Object();
      o.Set("family", f.family).Set("points", f.points).Set("r2", f.r2).Set("mape", f.mape);
      o.Set("worst", f.worst).Set("worst_error", f.worst_error).Set("fitted", f.fitted);
      fams.Push(o);
    }
    Json j = Json::Object();
    j.Set("gpu", gpu_id).Set("families", fams).Set("profile", text);
    if (!opt.out.empty()) j.Set("out", opt.out);
    EmitJson(opt, j);
    return Status::Ok();
  }
  fmt::print("fit for {} over {} file(s); fabrics {} and {}\n\n", gpu_id, ms.size(), intra, inter);
  fmt::print("{:<40} {:>6} {:>8} {:>7} {:>9}  {}\n", "family", "points", "R^2", "MAPE", "worst",
             "fitted");
  for (const auto& f : r.families) {
    // A reported-only family (sustained clocks) has no worst point.
    fmt::print("{:<40} {:>6} {:>8.4f} {:>6.2f}% {:>+8.1f}%  {}{}\n", f.family, f.points, f.r2,
               100 * f.mape, 100 * f.worst_error, f.fitted,
               f.worst.empty() ? "" : fmt::format("  (worst: {})", f.worst));
  }
  for (const auto& sk : r.skipped) fmt::print("skipped: {}\n", sk);
  fmt::print("\n{}", text);
  if (!opt.out.empty()) {
    fmt::print("\nwrote {}; use it with `cluster: {{calibration: {}}}` in a scenario\n", opt.out,
               opt.out);
  }
  return Status::Ok();
}

Status CalibrateCommand(const CommonOptions& opt, const std::string& self) {
  // The program: $PARASIM_CALIBRATE, beside this binary (bazel-bin/tools/calibrate/), or PATH.
  std::string prog;
  if (const char* env = std::getenv("PARASIM_CALIBRATE")) prog = env;
  if (prog.empty()) {
    std::error_code ec;
    std::filesystem::path me = std::filesystem::canonical("/proc/self/exe", ec);
    if (ec) me = self;
    for (auto cand : {me.parent_path() / "calibrate" / "parasim-calibrate",
                      me.parent_path() / "parasim-calibrate"}) {
      if (std::filesystem::exists(cand)) {
        prog = cand.string();
        break;
      }
    }
  }
  if (prog.empty()) {
    return InvalidArgument(
        "calibrate:1:1: error: the calibration program is not built (it needs the CUDA toolkit at "
        "build time): run `tools/bazel build //tools/calibrate:parasim-calibrate` on a machine "
        "with /usr/local/cuda, or set PARASIM_CALIBRATE to its path");
  }
  std::string args;
  if (!opt.scenario.empty()) {
    PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
    PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenario(opt.scenario, opt.sets, cat));
    const StepKernels k = StepKernelsOf(s.model, s.training, s.layout);
    std::string shapes;
    for (const auto& g : k.gemms) {
      shapes += fmt::format("{}{}x{}x{}", shapes.empty() ? "" : ",", g.m, g.n, g.k);
    }
    fmt::print(stderr, "{}: {} distinct GEMM shapes ({}), attention {} x {} x {}\n", opt.scenario,
               k.gemms.size(), DtypeName(k.dtype), k.attention_batch, k.attention_seq,
               k.attention_head_dim);
    if (!shapes.empty()) args += " --shapes " + shapes;
    if (k.dtype == Dtype::kFp8) args += " --fp8-shapes";
    args += fmt::format(" --attention {}x{}x{}", k.attention_batch, k.attention_seq,
                        k.attention_head_dim);
  }
  std::string cmd =
      fmt::format("'{}' --out '{}'", prog, opt.out.empty() ? "measurements.yaml" : opt.out);
  cmd += args;
  if (opt.quick) cmd += " --quick";
  if (!opt.only.empty()) {
    // Goes into a shell command: part names and commas only (the program checks the names).
    if (opt.only.find_first_not_of("abcdefghijklmnopqrstuvwxyz,") != std::string::npos) {
      return InvalidArgument(fmt::format(
          "calibrate:1:1: error: --only '{}': expected part names such as gemm,contention "
          "(gemm, memory, attention, host, collectives, contention, sustained)",
          opt.only));
    }
    cmd += " --only " + opt.only;
  }
  std::fflush(stdout);
  const int rc = std::system(cmd.c_str());
  const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
  if (code == 0) return Status::Ok();
  Status st = code == 2 ? InvalidArgument("calibrate: the calibration program refused (see above)")
                        : Internal("calibrate: the calibration program failed (see above)");
  return st;
}

// The replay-speed benchmark (run --timing --repeat N): the same step lowered and replayed N
// times in one process, as a sweep does one layout after another. The first is cold (page
// faults, caches); the median and the fastest are what a replay costs once warm.
static Status RepeatReplays(const Scenario& s, const StepOptions& so, const StepReport& first,
                            int repeat) {
  std::vector<double> total{first.replay_ms}, lower{first.lower_ms},
      engine{first.replay_ms - first.lower_ms}, summary{first.summary_ms};
  for (int i = 1; i < repeat; ++i) {
    PARASIM_ASSIGN_OR_RETURN(StepReport r,
                             SimulateStep(s.model, s.training, s.layout, s.cluster, so));
    if (r.step_time_s != first.step_time_s) {
      return Internal("run --repeat: a replay of the same step gave a different step time");
    }
    total.push_back(r.replay_ms);
    lower.push_back(r.lower_ms);
    engine.push_back(r.replay_ms - r.lower_ms);
    summary.push_back(r.summary_ms);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto least = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  fmt::print(stderr,
             "repeat: {} replays; replay_ms median {:.3f} fastest {:.3f} (lowering median {:.3f}, "
             "engine median {:.3f}; the summary after it, not in replay_ms, median {:.3f})\n",
             repeat, median(total), least(total), median(lower), median(engine), median(summary));
  return Status::Ok();
}

Status RunCommand(const CommonOptions& opt) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenario(InputOf(opt), opt.sets, cat));
  PARASIM_RETURN_IF_ERROR(s.fixed_layout);
  StepOptions so;
  so.full = opt.full;
  so.granularity = opt.ops ? Granularity::kOp : Granularity::kCoarse;
  LoweredStep lowered;
  PARASIM_ASSIGN_OR_RETURN(StepReport r,
                           SimulateStep(s.model, s.training, s.layout, s.cluster, so, &lowered));
  if (!opt.full) {  // an --full replay of every rank is too long to run twice
    for (const std::string& advice :
         {RecomputeLayersAdvice(s.model, s.training, s.layout, s.cluster, r),
          GradReduceAdvice(s.model, s.training, s.layout, s.cluster, r),
          FoldingAdvice(s.model, s.training, s.layout, s.cluster, r),
          LossFusionAdvice(s.model, s.training, s.layout, s.cluster, r),
          GroupedGemmAdvice(s.model, s.training, s.layout, s.cluster, r)}) {
      if (!advice.empty()) r.warnings.push_back(advice);
    }
  }
  std::optional<GoodputReport> goodput;
  if (GoodputModelled(s)) {
    const auto g0 = std::chrono::steady_clock::now();
    PARASIM_ASSIGN_OR_RETURN(goodput, ModelGoodput(s, r.step_time_s, lowered));
    if (opt.timing) {
      fmt::print(
          stderr, "goodput_ms: {:.3f}\n",
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g0).count());
    }
    if (s.training.tokens > 0) {
      // The time to train, GPU-hours and cost now include what failures and stragglers take.
      const double scale = goodput->time_to_train_s / std::max(r.time_to_train_s, 1e-12);
      r.time_to_train_s = goodput->time_to_train_s;
      r.gpu_hours *= scale;
      r.cost *= scale;
    }
  }
  const GoodputReport* gp = goodput ? &*goodput : nullptr;
  if (opt.timing) {
    fmt::print(stderr, "replay_ms: {:.3f}\n", r.replay_ms);
    fmt::print(stderr,
               "tasks: {} events: {} moves: {} (lowering {:.3f} ms; {} tasks placed by "
               "periodicity{})\n",
               r.tasks, r.events, r.moves, r.lower_ms, r.jumped_tasks,
               r.period_anchors > 1 ? fmt::format(", a period of {} anchors", r.period_anchors)
                                    : std::string());
    if (opt.repeat > 1) PARASIM_RETURN_IF_ERROR(RepeatReplays(s, so, r, opt.repeat));
  }
  if (!opt.trace.empty()) {
    // The trace is always op-level: one span per op, collective and transfer.
    StepOptions to = so;
    to.granularity = Granularity::kOp;
    to.record_memory = true;
    LoweredStep low;
    sim::Timeline tl;
    PARASIM_ASSIGN_OR_RETURN(StepReport tr,
                             SimulateStep(s.model, s.training, s.layout, s.cluster, to, &low, &tl));
    (void)tr;
    PARASIM_RETURN_IF_ERROR(
        WriteFileAtomic(opt.trace, sim::ChromeTraceJson(low.program, tl, TaskCatNames())));
    if (!opt.json) fmt::print(stderr, "wrote op-level trace {} ({} tasks)\n", opt.trace, tr.tasks);
  }
  if (!opt.svg.empty()) {
    LoweredStep low;
    sim::Timeline tl;
    PARASIM_ASSIGN_OR_RETURN(StepReport sr,
                             SimulateStep(s.model, s.training, s.layout, s.cluster, so, &low, &tl));
    (void)sr;
    PARASIM_RETURN_IF_ERROR(WriteFileAtomic(opt.svg, TimelineSvg(low, tl)));
    if (!opt.json) fmt::print(stderr, "wrote pipeline timeline {}\n", opt.svg);
  }
  if (opt.json) {
    EmitJson(opt, RunJson(s, r, gp));
    return Status::Ok();
  }
  PrintRun(s, r, gp);
  return Status::Ok();
}

namespace {

struct ScenarioPair {
  Scenario a, b;
};

// diff's two sides: A with --set and --set-a; B (its file, or A's) with --set and --set-b.
StatusOr<ScenarioPair> LoadPair(const CommonOptions& opt, const Catalogs& cat) {
  if (opt.vs.empty() && !opt.vs_text && opt.sets_a.empty() && opt.sets_b.empty()) {
    return InvalidArgument(fmt::format(
        "{}:1:1: error: nothing to compare: give a second scenario (B.yaml, or report --vs "
        "B.yaml), or two variants of this one with --set-a KEY=VALUE and --set-b KEY=VALUE",
        opt.file));
  }
  std::vector<std::string> sa = opt.sets, sb = opt.sets;
  sa.insert(sa.end(), opt.sets_a.begin(), opt.sets_a.end());
  sb.insert(sb.end(), opt.sets_b.begin(), opt.sets_b.end());
  YamlInput in_b = InputOf(opt);
  if (opt.vs_text) {
    in_b = YamlInput(opt.vs, *opt.vs_text);
  } else if (!opt.vs.empty()) {
    in_b = YamlInput(opt.vs);
  }
  PARASIM_ASSIGN_OR_RETURN(Scenario a, LoadScenario(InputOf(opt), sa, cat));
  PARASIM_RETURN_IF_ERROR(a.fixed_layout);
  PARASIM_ASSIGN_OR_RETURN(Scenario b, LoadScenario(in_b, sb, cat));
  PARASIM_RETURN_IF_ERROR(b.fixed_layout);
  return ScenarioPair{std::move(a), std::move(b)};
}

Json DiffJson(const Scenario& a, const StepReport& ra, const Scenario& b, const StepReport& rb,
              const StepDiff& d) {
  Json j = Json::Object();
  j.Set("a", RunJson(a, ra)).Set("b", RunJson(b, rb));
  Json rows = Json::Array();
  for (const DiffRow& row : d.rows) {
    Json o = Json::Object();
    o.Set("what", row.what).Set("unit", std::string(DiffUnitName(row.unit)));
    if (row.in_a) {
      o.Set("a", row.a);
    } else {
      o.Set("a", Json());
    }
    if (row.in_b) {
      o.Set("b", row.b);
    } else {
      o.Set("b", Json());
    }
    rows.Push(o);
  }
  j.Set("rows", rows).Set("reason", d.reason);
  return j;
}

void PrintDiff(const Scenario& a, const Scenario& b, const StepDiff& d) {
  fmt::print("A  {}: {}\n   {}\n", a.name.empty() ? a.file : a.name, d.a_cluster, d.a_layout);
  fmt::print("B  {}: {}\n   {}\n\n", b.name.empty() ? b.file : b.name, d.b_cluster, d.b_layout);
  fmt::print("{:<28} {:>18} {:>18}  {}\n", "", "A", "B", "change (B - A)");
  for (const DiffRow& row : d.rows) {
    fmt::print("{:<28} {:>18} {:>18}  {}\n", row.what, DiffValue(row, false), DiffValue(row, true),
               DiffChange(row));
  }
  fmt::print("\n{}\n", d.reason);
}

}  // namespace

Status DiffCommand(const CommonOptions& opt) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(ScenarioPair p, LoadPair(opt, cat));
  StepOptions so;
  PARASIM_ASSIGN_OR_RETURN(StepReport ra,
                           SimulateStep(p.a.model, p.a.training, p.a.layout, p.a.cluster, so));
  PARASIM_ASSIGN_OR_RETURN(StepReport rb,
                           SimulateStep(p.b.model, p.b.training, p.b.layout, p.b.cluster, so));
  const StepDiff d = DiffSteps(p.a, ra, p.b, rb);
  if (opt.json) {
    EmitJson(opt, DiffJson(p.a, ra, p.b, rb, d));
    return Status::Ok();
  }
  PrintDiff(p.a, p.b, d);
  return Status::Ok();
}

namespace {

// One row of compare's table: a kind's measured and predicted seconds.
struct KindRow {
  std::string what;
  double m, p;
};

std::vector<KindRow> KindRows(const KindTimes& measured, const KindTimes& predicted) {
  std::vector<KindRow> rows = {{"step (GPU span)", measured.span_s, predicted.span_s}};
  for (int k = 0; k < kNumKernelKinds; ++k) {
    rows.push_back({std::string(KernelKindName(static_cast<KernelKind>(k))), measured.seconds[k],
                    predicted.seconds[k]});
  }
  rows.push_back({"idle", measured.idle_s, predicted.idle_s});
  return rows;
}

Json CompareJson(const CommonOptions& opt, const std::vector<KindRow>& rows,
                 const KindTimes& measured, const KindTimes& predicted, double step_time_s) {
  auto detail = [](const std::map<std::string, double>& m) {
    Json o = Json::Object();
    for (const auto& [k, v] : m) o.Set(k, v);
    return o;
  };
  Json j = Json::Object();
  j.Set("trace", opt.trace_in).Set("stage", opt.stage).Set("kernels", measured.kernels);
  Json kinds = Json::Array();
  for (const KindRow& row : rows) {
    Json o = Json::Object();
    o.Set("kind", row.what).Set("measured_s", row.m).Set("predicted_s", row.p);
    kinds.Push(o);
  }
  j.Set("kinds", kinds).Set("measured_communication", detail(measured.comm_detail));
  j.Set("predicted_communication", detail(predicted.comm_detail));
  j.Set("step_time_s", step_time_s);
  if (!opt.out.empty()) j.Set("profile", opt.out);
  return j;
}

void PrintCompare(const CommonOptions& opt, const Scenario& s, const std::vector<KindRow>& rows,
                  const KindTimes& measured, const KindTimes& predicted) {
  fmt::print("{}: {} GPU kernels on one rank; replay of stage {} of {}\n\n", opt.trace_in,
             measured.kernels, opt.stage, s.name.empty() ? s.file : s.name);
  fmt::print("{:<18} {:>14} {:>14} {:>10}\n", "kind", "measured", "predicted", "error");
  for (const KindRow& row : rows) {
    fmt::print("{:<18} {:>14} {:>14} {:>10}\n", row.what, Seconds(row.m), Seconds(row.p),
               row.m > 0 ? fmt::format("{:+.1f}%", 100 * (row.p - row.m) / row.m) : "-");
  }
  auto line = [](const std::map<std::string, double>& m) {
    std::string out;
    for (const auto& [k, v] : m) {
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", k, Seconds(v));
    }
    return out.empty() ? std::string("none") : out;
  };
  fmt::print("\ncommunication measured by collective: {}\n", line(measured.comm_detail));
  fmt::print("communication predicted by group: {}\n", line(predicted.comm_detail));
  std::vector<KindRow> gaps(rows.begin() + 1, rows.end());
  std::sort(gaps.begin(), gaps.end(), [](const KindRow& a, const KindRow& b) {
    return std::fabs(a.m - a.p) > std::fabs(b.m - b.p);
  });
  fmt::print("\nlargest gaps (predicted - measured):\n");
  for (size_t i = 0; i < 3 && i < gaps.size(); ++i) {
    fmt::print("  {:<16} {}{}\n", gaps[i].what, gaps[i].p >= gaps[i].m ? "+" : "-",
               Seconds(std::fabs(gaps[i].p - gaps[i].m)));
  }
  if (!opt.out.empty()) {
    fmt::print("\nwrote {} (measured efficiencies; use it as cluster.calibration)\n", opt.out);
  }
}

}  // namespace

Status CompareCommand(const CommonOptions& opt) {
  if (opt.trace_in.empty()) {
    return InvalidArgument(
        "compare:1:1: error: give the profiler trace: parasim compare --trace step.json SCENARIO");
  }
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenario(InputOf(opt), opt.sets, cat));
  PARASIM_RETURN_IF_ERROR(s.fixed_layout);
  if (opt.stage < 0 || opt.stage >= s.layout.pp) {
    return InvalidArgument(fmt::format("--stage {}:1:1: error: expected a pipeline stage 0 to {}",
                                       opt.stage, s.layout.pp - 1));
  }
  PARASIM_ASSIGN_OR_RETURN(KindTimes measured, ReadKinetoTrace(opt.trace_in));
  StepOptions so;
  so.granularity = Granularity::kOp;
  LoweredStep low;
  sim::Timeline tl;
  PARASIM_ASSIGN_OR_RETURN(StepReport r,
                           SimulateStep(s.model, s.training, s.layout, s.cluster, so, &low, &tl));
  const KindTimes predicted = PredictedKinds(s, low, tl, opt.stage);
  const std::vector<KindRow> rows = KindRows(measured, predicted);
  if (!opt.out.empty()) {
    CalibrationProfile prof = ProfileFromTrace(s, measured, predicted, opt.trace_in);
    PARASIM_RETURN_IF_ERROR(WriteFileAtomic(opt.out, FormatCalibrationProfile(prof)));
  }
  if (opt.json) {
    EmitJson(opt, CompareJson(opt, rows, measured, predicted, r.step_time_s));
  } else {
    PrintCompare(opt, s, rows, measured, predicted);
  }
  return Status::Ok();
}

Status ReportCommand(const CommonOptions& opt) {
  if (!opt.from.empty()) {
    PARASIM_ASSIGN_OR_RETURN(std::string text, ReadFile(opt.from));
    PARASIM_ASSIGN_OR_RETURN(std::string html, ReportFromJson(text, opt.from));
    const std::string out = opt.out.empty() ? "report.html" : opt.out;
    PARASIM_RETURN_IF_ERROR(WriteFileAtomic(out, html));
    fmt::print("wrote {}\n", out);
    return Status::Ok();
  }
  if (opt.file.empty()) {
    return InvalidArgument("report:1:1: error: give a scenario file, or --from RESULTS.json");
  }
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  // With --vs (or --set-a/--set-b) the report's scenario is diff's side A.
  const bool compare = !opt.vs.empty() || !opt.sets_a.empty() || !opt.sets_b.empty();
  ScenarioPair pair;
  if (compare) {
    PARASIM_ASSIGN_OR_RETURN(pair, LoadPair(opt, cat));
  } else {
    PARASIM_ASSIGN_OR_RETURN(pair.a, LoadScenario(InputOf(opt), opt.sets, cat));
    PARASIM_RETURN_IF_ERROR(pair.a.fixed_layout);
  }
  const Scenario& s = pair.a;
  std::optional<SweepOutcome> sweep;
  std::optional<Robustness> robust;
  if (s.sweep) {
    const SweepOptions so = SweepOptionsOf(opt);
    PARASIM_ASSIGN_OR_RETURN(sweep, RunSweep(s, so));
    if (opt.robust) {
      PARASIM_ASSIGN_OR_RETURN(robust,
                               SweepRobustness(s, *sweep, RobustnessOptions::Jobs(so.jobs)));
    }
  }
  StepOptions o;
  o.record_memory = true;
  LoweredStep low;
  sim::Timeline tl;
  PARASIM_ASSIGN_OR_RETURN(StepReport r,
                           SimulateStep(s.model, s.training, s.layout, s.cluster, o, &low, &tl));
  std::optional<StepDiff> diff;
  if (compare) {
    const Scenario& b = pair.b;
    PARASIM_ASSIGN_OR_RETURN(StepReport rb,
                             SimulateStep(b.model, b.training, b.layout, b.cluster, {}));
    diff = DiffSteps(s, r, b, rb);
  }
  MemoryReport mem = EstimateMemory(s.model, s.training, s.layout, s.cluster);
  std::optional<GoodputReport> goodput;
  if (GoodputModelled(s)) {
    PARASIM_ASSIGN_OR_RETURN(goodput, ModelGoodput(s, r.step_time_s, low));
  }
  ReportInput in{&s,
                 &r,
                 &low,
                 &tl,
                 &mem,
                 sweep ? &*sweep : nullptr,
                 diff ? &*diff : nullptr,
                 goodput ? &*goodput : nullptr,
                 robust ? &*robust : nullptr};
  const std::string out = opt.out.empty() ? "report.html" : opt.out;
  PARASIM_RETURN_IF_ERROR(WriteFileAtomic(out, ReportHtml(in)));
  if (opt.json) {
    Json j = Json::Object();
    j.Set("out", out).Set("step_time_s", r.step_time_s);
    EmitJson(opt, j);
  } else {
    fmt::print("wrote {} (open it in a browser; self-contained, no network)\n", out);
  }
  return Status::Ok();
}

Status MemoryCommand(const CommonOptions& opt) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenario(InputOf(opt), opt.sets, cat));
  PARASIM_RETURN_IF_ERROR(s.fixed_layout);
  MemoryReport r = EstimateMemory(s.model, s.training, s.layout, s.cluster);
  if (opt.json) {
    Json stages = Json::Array();
    for (const auto& st : r.stages) {
      Json o = Json::Object();
      o.Set("layers", st.layers).Set("params", st.params);
      o.Set("params_bytes", st.params_bytes).Set("grads_bytes", st.grads_bytes);
      o.Set("optimizer_bytes", st.optimizer_bytes).Set("activations_bytes", st.activations_bytes);
      o.Set("other_bytes", st.other_bytes).Set("total_bytes", st.total());
      o.Set("micro_batches_in_flight", st.in_flight);
      stages.Push(o);
    }
    Json j = Json::Object();
    j.Set("stages", stages).Set("capacity_bytes", r.capacity_bytes).Set("fits", r.fits);
    j.Set("model_state_bytes_per_param", r.bytes_per_param).Set("layout", LayoutJson(s));
    EmitJson(opt, j);
    return Status::Ok();
  }
  fmt::print("{}: memory per GPU ({} x {}, {})\n", s.name.empty() ? s.file : s.name,
             s.cluster.gpus(), s.cluster.gpu.id, FormatBytes(s.cluster.gpu.memory));
  fmt::print("layout: {}\n", FormatLayout(s.layout, s.training, LayoutStyle::kSentence));
  fmt::print(
      "model states: {:.0f} bytes per parameter before sharding (weights, gradients, "
      "optimizer with fp32 master)\n\n",
      r.bytes_per_param);
  fmt::print("{:>5} {:>6} {:>11} {:>11} {:>11} {:>11} {:>12} {:>11} {:>11}  {}\n", "stage",
             "layers", "params", "weights", "grads", "optimizer", "activations", "other", "total",
             "fits");
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const StageMemory& st = r.stages[i];
    fmt::print("{:>5} {:>6} {:>10.2f}B {:>11} {:>11} {:>11} {:>12} {:>11} {:>11}  {}\n", i,
               st.layers, st.params / 1e9, FormatBytes(Bytes(st.params_bytes)),
               FormatBytes(Bytes(st.grads_bytes)), FormatBytes(Bytes(st.optimizer_bytes)),
               FormatBytes(Bytes(st.activations_bytes)), FormatBytes(Bytes(st.other_bytes)),
               FormatBytes(Bytes(st.total())), st.total() <= r.capacity_bytes ? "yes" : "NO");
  }
  fmt::print("\n{} against {} per GPU (GiB = 2^30 bytes).\n", r.fits ? "Fits" : "Does NOT fit",
             FormatBytes(Bytes(r.capacity_bytes)));
  if (!r.fits) {
    fmt::print(
        "Options: shard states (--set parallelism.zero=3), recompute activations "
        "(--set training.recompute=full), or more TP/PP.\n");
  }
  return Status::Ok();
}

Status CatalogCommand(const CommonOptions& opt) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  if (opt.json) {
    Json gpus = Json::Array();
    for (const auto& g : cat.hardware.gpus) {
      Json peak = Json::Object();
      for (int i = 0; i < kNumDtypes; ++i) {
        if (g.peak[i].flops_per_second() > 0) {
          peak.Set(std::string(DtypeName(static_cast<Dtype>(i))), g.peak[i].tflops());
        }
      }
      Json o = Json::Object();
      o.Set("id", g.id).Set("name", g.name).Set("memory_bytes", g.memory.bytes());
      o.Set("hbm_bandwidth_bytes_per_s", g.hbm_bandwidth.bytes_per_second());
      o.Set("peak_tflops", peak).Set("sms", g.sms);
      gpus.Push(o);
    }
    Json fabrics = Json::Array();
    for (const auto& f : cat.hardware.fabrics) {
      Json o = Json::Object();
      o.Set("id", f.id).Set("kind", f.kind == FabricKind::kIntra ? "intra" : "inter");
      o.Set("bandwidth_bytes_per_s", f.bandwidth.bytes_per_second());
      o.Set("latency_s", f.latency.seconds()).Set("efficiency", f.efficiency);
      fabrics.Push(o);
    }
    Json models = Json::Array();
    for (const auto& m : cat.models.models) {
      ParamCounts pc = CountParams(m);
      Json o = Json::Object();
      o.Set("id", m.id).Set("layers", m.layers).Set("hidden", m.hidden).Set("heads", m.heads);
      o.Set("kv_heads", m.kv()).Set("vocab", m.vocab).Set("params", pc.total);
      o.Set("active_params", pc.active).Set("source", m.source);
      if (m.is_moe()) o.Set("experts", m.moe.experts).Set("top_k", m.moe.top_k);
      models.Push(o);
    }
    Json j = Json::Object();
    j.Set("gpus", gpus).Set("fabrics", fabrics).Set("models", models);
    EmitJson(opt, j);
    return Status::Ok();
  }
  fmt::print("GPUs (dense peaks, datasheet; memory as nvidia-smi reports, GiB = 2^30 B)\n");
  fmt::print("  {:<16} {:>9} {:>11} {:>11} {:>11} {:>5}\n", "id", "memory", "HBM", "bf16", "fp8",
             "SMs");
  for (const auto& g : cat.hardware.gpus) {
    double fp8 = g.Peak(Dtype::kFp8).tflops();
    fmt::print("  {:<16} {:>9} {:>11} {:>11} {:>11} {:>5}\n", g.id, FormatBytes(g.memory),
               FormatBandwidth(g.hbm_bandwidth),
               fmt::format("{:.0f} TF/s", g.Peak(Dtype::kBf16).tflops()),
               fp8 > 0 ? fmt::format("{:.0f} TF/s", fp8) : "-", g.sms);
  }
  fmt::print(
      "\nFabrics (bandwidth per direction, per GPU for intra-node, per NIC for inter-node)\n");
  fmt::print("  {:<14} {:<6} {:>11} {:>9} {:>11}\n", "id", "kind", "bandwidth", "latency",
             "bus eff.");
  for (const auto& f : cat.hardware.fabrics) {
    fmt::print("  {:<14} {:<6} {:>11} {:>9} {:>10.0f}%\n", f.id,
               f.kind == FabricKind::kIntra ? "intra" : "inter", FormatBandwidth(f.bandwidth),
               FormatDuration(f.latency), f.efficiency * 100);
  }
  fmt::print("\nModels (parameters computed from the architecture)\n");
  fmt::print("  {:<14} {:>6} {:>7} {:>6} {:>4} {:>7} {:>10} {:>10}\n", "id", "layers", "hidden",
             "heads", "kv", "vocab", "params", "active");
  for (const auto& m : cat.models.models) {
    ParamCounts pc = CountParams(m);
    fmt::print("  {:<14} {:>6} {:>7} {:>6} {:>4} {:>7} {:>9.2f}B {:>9.2f}B\n", m.id, m.layers,
               m.hidden, m.heads, m.kv(), m.vocab, pc.total / 1e9, pc.active / 1e9);
  }
  return Status::Ok();
}

}  // namespace parasim
