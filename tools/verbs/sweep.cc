// parasim sweep: replay the layouts of a scenario's sweep block that can enter the ranking, and
// rank them by its objective; with --robust, replay the leaders under the cost model's swings.
// Under mpirun the layouts are spread over the ranks (tools/mpi_processes.h) and rank 0 prints.
#include "strategies/sweep.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>

#include "sim/parse_units.h"
#include "strategies/answer_sweep.h"
#include "strategies/layout_format.h"
#include "strategies/robustness.h"
#include "tools/text.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/launch.h"
#include "tools/verbs/step_json.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document scenario;
  std::vector<std::string> sets;
  int jobs = 0;     // 0 = all cores
  std::string out;  // a CSV of every layout's result, written as results arrive
  bool resume = false;
  bool exhaustive = false;  // replay every layout that fits
  bool robust = false;      // replay the leaders under the cost model's swings
  int batch = 16;           // replays decided together
  int64_t max_layouts = 10'000'000;
  std::string launch;  // megatron | torchtitan: the best layout's launch flags or config
};

struct Result {
  Scenario s;
  SweepOutcome r;
  std::optional<Robustness> robust;
  double robust_s = 0;  // wall clock of --robust's replays
  // What the ranking answers beyond its order (strategies/answer_sweep.h).
  TiedWithBest ties;
  std::vector<std::optional<size_t>> best_on;  // a co-design sweep's best per cluster
  LearningRateAdvice lr;
  bool codesign = false;  // the sweep compares clusters: layouts are named with theirs, priced
  bool priced = false;    // every cluster has a price: costs are money, not GPU-hours
  std::string launch;     // --launch's format ("" = none)
  std::optional<LaunchConfig> best_launch;  // the best layout's, with --launch
  bool every_layout = false;                // the JSON lists every replayed layout (VerbContext)
};

// A progress bar on stderr: done / total layouts and the time left.
std::function<void(int64_t, int64_t)> ProgressBar() {
  auto mu = std::make_shared<std::mutex>();
  const auto start = std::chrono::steady_clock::now();
  return [mu, start](int64_t done, int64_t total) {
    if (done % 64 != 0 && done != total) return;
    std::lock_guard<std::mutex> lock(*mu);
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

StatusOr<Result> Run(const Options& o, const VerbContext& ctx) {
  PARASIM_RETURN_IF_ERROR(CheckLaunch(o.launch));
  if (o.resume && o.out.empty()) {
    return InvalidArgument(
        "--resume: error: it resumes from the results file of --out; give --out FILE.csv");
  }
  Result res{.launch = o.launch};
  PARASIM_ASSIGN_OR_RETURN(res.s, LoadScenarioOf(o.scenario, o.sets));
  const Scenario& s = res.s;
  SweepOptions so = SweepOptionsOf(o.jobs, ctx.processes);
  so.max_layouts = o.max_layouts;
  so.out_csv = o.out;
  so.resume = o.resume;
  // The calibration profiles the clusters read count: an edited profile is another sweep.
  std::vector<std::string> profiles;
  if (!s.cluster.calibration.empty()) profiles.push_back(s.cluster.calibration);
  if (s.sweep) {
    for (const SweepHardware& h : s.sweep->hardware) {
      if (!h.cluster.calibration.empty()) profiles.push_back(h.cluster.calibration);
    }
  }
  so.fingerprint = ScenarioFingerprint(o.scenario, o.sets, profiles);
  so.exhaustive = o.exhaustive;
  so.batch = o.batch;
  if (ctx.progress && ctx.primary()) so.progress = ProgressBar();
  PARASIM_ASSIGN_OR_RETURN(res.r, RunSweep(s, so));
  if (!ctx.primary()) return res;  // rank 0 prints
  if (o.robust) {
    const auto t0 = std::chrono::steady_clock::now();
    PARASIM_ASSIGN_OR_RETURN(res.robust,
                             SweepRobustness(s, res.r, RobustnessOptions::Jobs(so.jobs)));
    res.robust_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  res.ties = TiesWithBest(s, res.r.ranked);
  res.best_on = BestOnEachCluster(s, res.r);
  res.lr = LearningRateAdviceOf(s, res.r);
  res.codesign = s.sweep && !s.sweep->hardware.empty();
  res.priced = SweepPriced(s);
  if (!o.launch.empty() && !res.r.ranked.empty()) {
    res.best_launch = ExportLaunch(WithLayout(s, res.r.ranked[0]));
  }
  res.every_layout = ctx.every_layout;
  return res;
}

// What became of the grid and where the wall clock went, on stderr.
std::string Notes(const Result& res) {
  const SweepOutcome& r = res.r;
  std::string out = res.robust ? fmt::format("robust_s: {:.3f}\n", res.robust_s) : "";
  out += fmt::format(
      "grid_points: {}\nvalid_layouts: {}\nmemory_rejected: {}\npruned: {}\nreplayed: {}\n"
      "elapsed_s: {:.3f}\nvalid_layouts_per_second: {:.0f}\nreplays_per_second: {:.0f}\n",
      r.grid_points, r.valid_layouts, r.memory_rejected, r.pruned, r.replayed, r.elapsed_s,
      r.valid_layouts_per_second, r.replays_per_second);
  out += fmt::format("phases_s: enumerate {:.3f}, screen {:.3f}, replay {:.3f}, report {:.3f}\n",
                     r.enumerate_s, r.screen_s, r.replay_s, r.report_s);
  if (r.resumed > 0 || r.resume_refused > 0) {
    out += fmt::format(
        "resumed: {} layouts taken from the results file; {} lines refused (their "
        "check fails: edited, or written for another scenario) and decided again\n",
        r.resumed, r.resume_refused);
  }
  return out;
}

// A layout as the ranking names it: a co-design sweep's with its cluster.
std::string Named(const Result& res, const SweepEntry& e) {
  const std::string layout = FormatLayout(e.layout, e.training, LayoutStyle::kShort);
  return res.codesign ? res.s.sweep->hardware[e.hardware].label + ": " + layout : layout;
}

const char* CostKey(const Result& res) {
  return res.priced ? "cost_per_million_tokens" : "gpu_hours_per_million_tokens";
}

// sweep --robust: how the leaders rank under each swing of the cost model.
Json RobustnessJson(const Result& res) {
  const Robustness& rob = *res.robust;
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
    x.Set("first_layout", Named(res, res.r.ranked[first])).Set("behind", w.behind);
    x.Set("holds", w.holds).Set("step_time_s", w.step_s[0]);
    x.Set("measure", std::string(SwingMeasure(w.swing.kind)));
    swings.Push(x);
  }
  o.Set("swings", swings);
  return o;
}

// The leaders, each as `run --json` prints it plus its rank, bottleneck and cluster.
Json ResultsJson(const Result& res) {
  const Scenario& s = res.s;
  const SweepOutcome& r = res.r;
  Json out = Json::Array();
  for (size_t i = 0; i < r.top_reports.size(); ++i) {
    const SweepEntry& e = r.ranked[i];
    const std::optional<GoodputReport>& g = r.top_goodput[i];
    // As `run --json` prints the layout: through the same goodput model where there is one.
    Json o = RunJson(WithLayout(s, e), r.top_reports[i], g ? &*g : nullptr);
    o.Set("rank", static_cast<int64_t>(i + 1)).Set("bottleneck", Bottleneck(r.top_reports[i]));
    if (res.codesign) {
      o.Set("hardware", s.sweep->hardware[e.hardware].label);
      // Per token as the object's own cost (or GPU-hours) gives it, through the same goodput.
      const double per_token =
          g && s.training.tokens > 0
              ? (res.priced ? r.top_reports[i].cost : r.top_reports[i].gpu_hours) /
                    s.training.tokens
              : CostPerMillionTokens(e) / 1e6;
      o.Set(CostKey(res), 1e6 * per_token);
    }
    out.Push(o);
  }
  return out;
}

// A co-design sweep's answer per cluster.
Json ClustersJson(const Result& res) {
  const Scenario& s = res.s;
  Json clusters = Json::Array();
  for (size_t h = 0; h < res.best_on.size(); ++h) {
    Json c = Json::Object();
    c.Set("hardware", s.sweep->hardware[h].label);
    c.Set("gpus", s.sweep->hardware[h].cluster.gpus());
    c.Set("fits", res.best_on[h].has_value());
    if (res.best_on[h]) {
      const SweepEntry& e = res.r.ranked[*res.best_on[h]];
      c.Set("layout", FormatLayout(e.layout, e.training, LayoutStyle::kShort));
      c.Set("tokens_per_s", KeptTokensPerS(e));
      c.Set(CostKey(res), CostPerMillionTokens(e));
      if (s.training.tokens > 0) c.Set("time_to_train_s", TimeToTrainS(s, e));
    }
    clusters.Push(c);
  }
  return clusters;
}

Json ToJson(const Result& res) {
  const SweepOutcome& r = res.r;
  Json j = Json::Object();
  j.Set("scenario", res.s.name).Set("grid_points", r.grid_points);
  j.Set("valid_layouts", r.valid_layouts).Set("memory_rejected", r.memory_rejected);
  j.Set("pruned", r.pruned).Set("replayed", r.replayed).Set("feasible", r.feasible);
  j.Set("elapsed_s", r.elapsed_s).Set("valid_layouts_per_second", r.valid_layouts_per_second);
  j.Set("replays_per_second", r.replays_per_second);
  j.Set("results", ResultsJson(res));
  j.Set("within_tie_of_best", static_cast<int64_t>(res.ties.count)).Set("tie_band", kRankTie);
  if (res.robust) j.Set("robustness", RobustnessJson(res));
  Json pareto = Json::Array();
  for (size_t i : r.pareto) pareto.Push(Named(res, r.ranked[i]));
  j.Set("pareto", pareto);
  if (res.best_launch) j.Set("launch", LaunchJson(*res.best_launch, res.launch));
  if (res.codesign) j.Set("clusters", ClustersJson(res));
  j.Set("held", HeldKeysJson(res.s));
  if (res.every_layout) j.Set("layouts", EveryLayoutJson(res.s, r));
  return j;
}

// "1.20M tokens/s, costs 0.445 per million tokens, 9.7 days to train"; with goodput modelled
// the tokens a second kept through failures ("kept"), below the table's failure-free rate.
std::string PricedText(const Result& res, const SweepEntry& e) {
  return fmt::format("{:>9} tokens/s{}, {} per million tokens{}", Human(KeptTokensPerS(e)),
                     e.goodput < 1 ? " kept" : "",
                     res.priced ? fmt::format("costs {:.4g}", CostPerMillionTokens(e))
                                : fmt::format("{:.4g} GPU-hours", CostPerMillionTokens(e)),
                     res.s.training.tokens > 0
                         ? fmt::format(", {} to train", Seconds(TimeToTrainS(res.s, e)))
                         : "");
}

// The layout keys the sweep block does not list, held at the scenario's values (sp among them:
// with tp > 1 a layout choice the sweep explores only when listed).
std::string HeldText(const Result& res) {
  const Json held = HeldKeysJson(res.s);
  if (held.fields().empty()) return "";
  std::string keys;
  for (const auto& [name, v] : held.fields()) {
    const std::string value = v.kind() == Json::Kind::kString ? v.string_value() : v.Dump(0);
    keys += fmt::format("{}{} {}", keys.empty() ? "" : ", ", name, value);
  }
  return fmt::format(
      "Held at the scenario's values (not in the sweep block; list one there to explore it): "
      "{}\n\n",
      keys);
}

// The width of the table's layout column.
size_t LayoutWidth(const Result& res) {
  size_t width = 40;
  for (size_t i = 0; i < res.r.top_reports.size(); ++i) {
    width = std::max(width, Named(res, res.r.ranked[i]).size());
  }
  return width;
}

// The leaders, a row each.
std::string TableText(const Result& res) {
  const SweepOutcome& r = res.r;
  const size_t width = LayoutWidth(res);
  std::string out = fmt::format("{:>3}  {:<{}} {:>10} {:>9} {:>6} {:>7} {:>13} {:>12}  {}\n", "#",
                                "layout", width, "step", "tokens/s", "MFU", "bubble",
                                "exposed comm", "peak memory", "bottleneck");
  for (size_t i = 0; i < r.top_reports.size(); ++i) {
    const StepReport& rep = r.top_reports[i];
    const SweepEntry& e = r.ranked[i];
    const double peak =
        Bytes(*std::max_element(rep.peak_memory_bytes.begin(), rep.peak_memory_bytes.end())).gib();
    out += fmt::format("{:>3}  {:<{}} {:>10} {:>9} {:>5.1f}% {:>6.1f}% {:>13} {:>12}  {}\n", i + 1,
                       Named(res, e), width, Seconds(rep.step_time_s), Human(rep.tokens_per_s),
                       100 * rep.mfu, 100 * rep.bubble_fraction,
                       fmt::format("{} {:.0f}%", Seconds(rep.exposed.total()),
                                   100 * rep.exposed.total() / rep.step_time_s),
                       fmt::format("{:.1f}/{:.1f} GiB", peak, ClusterOf(res.s, e).gpu.memory.gib()),
                       Bottleneck(rep));
  }
  return out;
}

// Free memory from the peak as the front compares it (PrintedFrontOf), in tenths of a GiB: the
// tie note and the front print one figure for one layout.
double FreeTenths(const Result& res, const SweepEntry& e) {
  return std::round(10 * ClusterOf(res.s, e).gpu.memory.gib()) -
         PeakTenthsOfGib(e.peak_memory_bytes);
}

std::string TiesText(const Result& res) {
  const TiedWithBest& ties = res.ties;
  if (ties.count == 0) return "";
  return fmt::format(
      "\n{} more layout{} within {:.0f}% of #1 by the objective, closer than the published runs "
      "parasim is checked against can tell apart (validate's tie band): among them, #{} leaves "
      "the most memory free ({:.1f} GiB).\n",
      ties.count, ties.count == 1 ? " is" : "s are", 100 * kRankTie, ties.roomiest + 1,
      FreeTenths(res, res.r.ranked[ties.roomiest]) / 10);
}

// Each swing's verdict, then what to measure where #1 does not hold.
std::string RobustnessText(const Result& res) {
  const Robustness& rob = *res.robust;
  if (rob.leaders == 0) {
    return "\nRobustness: nothing to swing (the memory objective, or a single layout).\n";
  }
  const size_t extra = rob.leaders - rob.top;
  std::string out = fmt::format(
      "\nRobustness: the {} leaders{} replayed with one of the cost model's least certain "
      "parameters swung at a time, by the spread of the measurements behind it:\n",
      rob.top, extra > 0 ? fmt::format(" and {} more clusters' best", extra) : "");
  for (const SwingOutcome& w : rob.swings) {
    const size_t first = rob.ranked[w.first];
    std::string verdict;
    if (w.first == 0) {
      verdict = "#1 stays first";
    } else if (w.holds) {
      verdict = fmt::format("#{} first, #1 within {:.1f}% (a tie)", first + 1, 100 * w.behind);
    } else {
      verdict = fmt::format("#{} first, {:.1f}% ahead of #1: {}", first + 1, 100 * w.behind,
                            Named(res, res.r.ranked[first]));
    }
    out += fmt::format("  {:<32} {:<38} {}\n", SwingText(w.swing), w.applied, verdict);
  }
  out += fmt::format("#1 stays first, or within {:.0f}% of the first, under {} of {} swings{}\n",
                     100 * kRankTie, rob.held, rob.swings.size(),
                     rob.held == static_cast<int>(rob.swings.size())
                         ? ": the answer does not hang on them."
                         : ". Before choosing, measure what it hangs on:");
  std::vector<std::string> told;
  for (const SwingOutcome& w : rob.swings) {
    const std::string label = SwingLabel(w.swing);
    if (w.holds || std::find(told.begin(), told.end(), label) != told.end()) continue;
    told.push_back(label);
    out += fmt::format("  {}: {}\n", label, SwingMeasure(w.swing.kind));
  }
  return out;
}

std::string ClustersText(const Result& res) {
  const size_t half = LayoutWidth(res) / 2;
  std::string out = "\nBest layout on each cluster:\n";
  for (size_t h = 0; h < res.best_on.size(); ++h) {
    const std::string& label = res.s.sweep->hardware[h].label;
    if (!res.best_on[h]) {
      out += fmt::format("  {:<{}} no layout of the sweep fits\n", label, half);
      continue;
    }
    const SweepEntry& e = res.r.ranked[*res.best_on[h]];
    out += fmt::format("  {:<{}} {:<28} {}\n", label, half,
                       FormatLayout(e.layout, e.training, LayoutStyle::kShort), PricedText(res, e));
  }
  return out;
}

std::string ParetoText(const Result& res) {
  std::string out = res.codesign
                        ? "\nPareto front (throughput vs cost per token), fastest first:\n"
                        : "\nPareto front (throughput vs memory headroom), fastest first:\n";
  const size_t width = LayoutWidth(res);
  // A rank is printed where it is the ranking's: within the first `top` (the layouts pruned
  // could not enter them), or with nothing pruned. Below them, pruned layouts may rank between
  // the replayed ones (their index among the replayed had changed with --batch).
  const size_t exact =
      res.r.pruned == 0 ? res.r.ranked.size() : static_cast<size_t>(std::max(0, res.s.sweep->top));
  bool unranked = false;
  for (size_t k = 0; k < res.r.pareto.size() && k < 10; ++k) {
    const size_t i = res.r.pareto[k];
    const SweepEntry& e = res.r.ranked[i];
    const std::string rank = i < exact ? fmt::format("#{}", i + 1) : fmt::format(">#{}", exact);
    unranked = unranked || i >= exact;
    if (!res.codesign) {
      out += fmt::format("  {:<6} {:<40} {:>9} tokens/s, {:.1f} GiB free\n", rank, Named(res, e),
                         Human(e.tokens_per_s), FreeTenths(res, e) / 10);
      continue;
    }
    out += fmt::format("  {:<6} {:<{}} {}\n", rank, Named(res, e), width, PricedText(res, e));
  }
  if (unranked) {
    out += fmt::format(
        "  (>#{}: ranked below the first {}; the layouts pruned keep their exact "
        "rank unknown: --exhaustive gives it)\n",
        exact, exact);
  }
  if (res.r.pareto.size() > 10) {
    out += fmt::format("  ... and {} more on the front (--json lists them all)\n",
                       res.r.pareto.size() - 10);
  }
  return out;
}

std::string RunnersUpText(const Result& res) {
  const SweepOutcome& r = res.r;
  if (r.top_reports.size() <= 1) return "";
  std::string out = "\nWhy the runners-up lose to #1:\n";
  const SweepEntry& first = r.ranked[0];
  for (size_t i = 1; i < r.top_reports.size(); ++i) {
    const SweepEntry& e = r.ranked[i];
    if (res.codesign && e.hardware != first.hardware) {
      // Another cluster: the step's parts do not compare, its price and speed do.
      const AgainstFirst d = CompareWithFirst(e, first);
      out += fmt::format(
          "  #{:<3} another cluster ({}): {:+.1f}% cost per token, {:+.1f}% throughput\n", i + 1,
          res.s.sweep->hardware[e.hardware].label, 100 * d.cost_per_token, 100 * d.throughput);
      continue;
    }
    if (res.s.sweep && res.s.sweep->objective == Objective::kMemory) {
      // Ranked by memory: a runner-up loses on its peak, whatever its speed.
      out += fmt::format("  #{:<3} {:.1f} GiB more at its peak ({:+.1f}% throughput)\n", i + 1,
                         Bytes(e.peak_memory_bytes - first.peak_memory_bytes).gib(),
                         100 * (e.tokens_per_s / first.tokens_per_s - 1));
      continue;
    }
    out += fmt::format("  #{:<3} {}\n", i + 1, WhyBehind(e, first));
  }
  return out;
}

std::string LearningRateText(const LearningRateAdvice& lr) {
  if (!lr.needed) return "";
  std::string out = fmt::format(
      "\nThe best layout uses global batch {} (scenario: {}): scale the learning rate by {:.2f} "
      "(linear scaling rule) and warm up over 5-10% of the steps",
      lr.global_batch, lr.base_global_batch, lr.scale);
  if (lr.steps > 0) {
    out += fmt::format(" ({:.0f}-{:.0f} of {:.0f} steps)", lr.warmup_lo_steps, lr.warmup_hi_steps,
                       lr.steps);
  }
  return out + ".\n";
}

std::string ToText(const Result& res) {
  const Scenario& s = res.s;
  const SweepOutcome& r = res.r;
  const std::string over = res.codesign
                               ? fmt::format("{} clusters", s.sweep->hardware.size())
                               : fmt::format("{} x {}", s.cluster.gpus(), s.cluster.gpu.id);
  std::string out = fmt::format(
      "{}: {} grid points ({}): {} valid layouts, {} over memory by the planner, {} "
      "replayed, {} fit\n\n",
      ScenarioName(s), r.grid_points, over, r.valid_layouts, r.memory_rejected, r.replayed,
      r.feasible);
  if (r.ranked.empty() && r.valid_layouts == 0) {
    return out +
           "No point of the sweep is a valid layout: each fails a layout check (TP, PP, DP, CP "
           "and EP must divide the GPUs, the layers, the heads and the batch; a mixture-of-"
           "experts model under TP needs SP; docs/SCENARIO.md, parallelism), with the keys the "
           "sweep holds at the scenario's values. `parasim run` on one of its layouts names the "
           "check; widen the sweep's values.\n";
  }
  if (r.ranked.empty()) {
    return out +
           "No layout of the sweep fits in memory. Try ZeRO 3, full recompute or more GPUs.\n";
  }
  if (r.ranked[0].goodput <= 0) {
    // GoodputFactor 0 for the leader: the objective (time or cost to train) is infinite.
    out +=
        "No run of these layouts ends: failures come faster than they restart and keep "
        "checkpoints (the reliability block); time and cost to train are infinite and do not "
        "order them.\n\n";
  }
  out += HeldText(res) + TableText(res) + TiesText(res);
  if (res.robust) out += RobustnessText(res);
  if (res.codesign) out += ClustersText(res);
  out += ParetoText(res) + RunnersUpText(res) + LearningRateText(res.lr);
  return res.best_launch ? out + LaunchText(*res.best_launch, res.launch) : out;
}

}  // namespace

Verb SweepVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "sweep",
      .help =
          "replay the layouts of the scenario's sweep block that can enter the ranking, and rank "
          "them by its objective",
      .flags = {Arg(&O::scenario, "file", "scenario YAML file with a sweep block")
                    .Python("scenario")
                    .Required(),
                SetFlag(&O::sets), JsonFlag<O>(), JobsFlag(&O::jobs),
                Opt(&O::out, "--out", "write every layout's result to this CSV as results arrive")
                    .Output(),
                Opt(&O::resume, "--resume",
                    "skip layouts already in --out (after an interruption)"),
                Opt(&O::exhaustive, "--exhaustive",
                    "replay every layout that fits, also those whose lower bounds cannot enter "
                    "the top or the Pareto front (same ranking, slower)"),
                Opt(&O::robust, "--robust",
                    "replay the leaders again with each of the cost model's least certain "
                    "parameters swung in turn, and say whether #1 stays first"),
                Opt(&O::batch, "--batch",
                    "replays decided together, at most the workers that replay at once "
                    "(threads x MPI ranks; default 16); changes the pruned and replayed counts, "
                    "not the ranking or the Pareto front")
                    .Range(1, 1 << 20),
                Opt(&O::max_layouts, "--max-layouts", "refuse sweeps larger than this").Positive(),
                Opt(&O::launch, "--launch",
                    "megatron or torchtitan: print the best layout (#1) as the Megatron-LM flags "
                    "or the torchtitan config that launch it")},
      .run = Run,
      .json = ToJson,
      .text = ToText,
      .notes = Notes,
      .under_mpi = true,
  });
}

}  // namespace parasim
