// parasim run: one training step of a scenario's layout, replayed (SCENARIO.md "CLI verbs").
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include "scenarios/serving_scenario.h"
#include "sim/io.h"
#include "sim/parse_units.h"
#include "sim/trace.h"
#include "strategies/answer_run.h"
#include "strategies/goodput.h"
#include "strategies/layout_format.h"
#include "strategies/schedule.h"
#include "strategies/step.h"
#include "tools/report.h"
#include "tools/text.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/launch.h"
#include "tools/verbs/serve.h"
#include "tools/verbs/step_json.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document scenario;
  std::vector<std::string> sets;
  bool timing = false;
  int repeat = 1;  // --timing: replays measured (the first, then the median and fastest)
  bool full = false;
  std::string trace;   // an op-level Chrome trace to write
  std::string svg;     // the pipeline timeline as SVG
  bool ops = false;    // replay at op granularity
  std::string launch;  // megatron | torchtitan: the layout's launch flags or config
};

struct Result {
  Scenario s;
  StepReport r;  // with the goodput model: its time to train, GPU-hours and cost through failures
  std::optional<GoodputReport> goodput;
  std::string notes;                    // --timing's figures, the files written
  std::string launch;                   // --launch's format, "" = none
  std::optional<ServeOutcome> serving;  // a serving scenario, handed to serve
};

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The replay-speed benchmark (run --timing --repeat N): the same step lowered and replayed N
// times in one process, as a sweep does one layout after another. The first is cold (page
// faults, caches); the median and the fastest are what a replay costs once warm.
StatusOr<std::string> RepeatReplays(const Scenario& s, const StepOptions& so,
                                    const StepReport& first, int repeat) {
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
  return fmt::format(
      "repeat: {} replays; replay_ms median {:.3f} fastest {:.3f} (lowering median {:.3f}, "
      "engine median {:.3f}; the summary after it, not in replay_ms, median {:.3f})\n",
      repeat, median(total), least(total), median(lower), median(engine), median(summary));
}

// What the step's replay advises, as warnings (not after a --full replay of every rank, which
// is too long to run again).
void AddAdvice(const Scenario& s, StepReport* r) {
  for (std::string& advice : StepAdvice(s.model, s.training, s.layout, s.cluster, *r)) {
    r->warnings.push_back(std::move(advice));
  }
}

// A trace's size: about 95 bytes a task in the Chrome JSON (measured: a 13.8M-task step wrote
// 1.3 GB). 2^23 tasks (about 0.8 GB) is what Perfetto's UI loads in a browser tab's memory;
// more is refused before it is built in memory and written.
constexpr size_t kMaxTraceTasks = size_t{1} << 23;
constexpr int kTraceBytesPerTask = 95;

// --trace (always op-level: one span per op, collective and transfer) and --svg.
Status WritePictures(const Options& o, const StepOptions& so, bool json, Result* res) {
  const Scenario& s = res->s;
  if (!o.trace.empty()) {
    StepOptions to = so;
    to.granularity = Granularity::kOp;
    to.record_memory = true;
    LoweredStep low;
    sim::Timeline tl;
    PARASIM_ASSIGN_OR_RETURN(StepReport tr,
                             SimulateStep(s.model, s.training, s.layout, s.cluster, to, &low, &tl));
    if (low.program.num_tasks() > kMaxTraceTasks) {
      return InvalidArgument(fmt::format(
          "--trace={}:1:9: error: the step's op-level replay has {} tasks, a trace of about {:.1f} "
          "GB (about {} bytes a task); at most {} tasks are written: a smaller global_batch "
          "(fewer micro-batches) or fewer layers give the same pattern in a smaller trace",
          o.trace, low.program.num_tasks(),
          static_cast<double>(low.program.num_tasks()) * kTraceBytesPerTask / 1e9,
          kTraceBytesPerTask, kMaxTraceTasks));
    }
    PARASIM_RETURN_IF_ERROR(
        WriteFileAtomic(o.trace, sim::ChromeTraceJson(low.program, tl, TaskCatNames())));
    if (!json) res->notes += fmt::format("wrote op-level trace {} ({} tasks)\n", o.trace, tr.tasks);
  }
  if (!o.svg.empty()) {
    LoweredStep low;
    sim::Timeline tl;
    PARASIM_ASSIGN_OR_RETURN(StepReport sr,
                             SimulateStep(s.model, s.training, s.layout, s.cluster, so, &low, &tl));
    (void)sr;
    PARASIM_RETURN_IF_ERROR(WriteFileAtomic(o.svg, TimelineSvg(low, tl)));
    if (!json) res->notes += fmt::format("wrote pipeline timeline {}\n", o.svg);
  }
  return Status::Ok();
}

StatusOr<Result> Run(const Options& o, const VerbContext& ctx) {
  PARASIM_RETURN_IF_ERROR(CheckLaunch(o.launch));
  if (!o.trace.empty() && !o.svg.empty()) {
    // One file for both: the SVG replaced the trace, and both were said written.
    // Absolute first: weakly_canonical leaves a path that does not exist yet relative, so
    // "./t.json" and "t.json" compared apart.
    std::error_code ea, eb;
    const auto a = std::filesystem::weakly_canonical(std::filesystem::absolute(o.trace), ea);
    const auto b = std::filesystem::weakly_canonical(std::filesystem::absolute(o.svg), eb);
    if ((!ea && !eb && a == b) || o.trace == o.svg) {
      return InvalidArgument(
          fmt::format("--svg={}:1:7: error: names the file --trace writes ({}); "
                      "give the two outputs two files",
                      o.svg, o.trace));
    }
  }
  Result res{.launch = o.launch};
  if (IsServingScenario(o.scenario.Input())) {
    if (!o.launch.empty()) {
      return InvalidArgument(fmt::format(
          "{}: --launch {} prints a training layout's launch flags; a serving scenario has none",
          o.scenario.file, o.launch));
    }
    // The training step's outputs: a serving scenario replays requests, not a step (they were
    // skipped with exit 0 and no file written).
    for (const auto& [given, flag] :
         {std::pair{!o.trace.empty(), "--trace"}, std::pair{!o.svg.empty(), "--svg"},
          std::pair{o.ops, "--ops"}, std::pair{o.full, "--full"},
          std::pair{o.timing, "--timing"}}) {
      if (given) {
        return InvalidArgument(fmt::format(
            "{}: {} applies to a training step; a serving scenario replays requests (its "
            "pictures: parasim report {} --out r.html)",
            o.scenario.file, flag, o.scenario.file));
      }
    }
    PARASIM_ASSIGN_OR_RETURN(res.serving, ServeDocument(o.scenario, o.sets, {}));
    return res;
  }
  PARASIM_ASSIGN_OR_RETURN(res.s, LoadFixedScenario(o.scenario, o.sets));
  const Scenario& s = res.s;
  StepOptions so;
  so.full = o.full;
  so.granularity = o.ops ? Granularity::kOp : Granularity::kCoarse;
  LoweredStep lowered;
  PARASIM_ASSIGN_OR_RETURN(res.r,
                           SimulateStep(s.model, s.training, s.layout, s.cluster, so, &lowered));
  if (!o.full) AddAdvice(s, &res.r);
  if (GoodputModelled(s)) {
    const auto g0 = std::chrono::steady_clock::now();
    PARASIM_ASSIGN_OR_RETURN(res.goodput, ModelGoodput(s, res.r.step_time_s, lowered));
    if (o.timing) res.notes += fmt::format("goodput_ms: {:.3f}\n", MsSince(g0));
    WithGoodput(s, *res.goodput, &res.r);
    if (!res.goodput->runs.note.empty()) res.r.warnings.push_back(res.goodput->runs.note);
  }
  if (o.timing) {
    const StepReport& r = res.r;
    res.notes += fmt::format("replay_ms: {:.3f}\n", r.replay_ms);
    res.notes += fmt::format(
        "tasks: {} events: {} moves: {} (lowering {:.3f} ms; {} tasks placed by "
        "periodicity{})\n",
        r.tasks, r.events, r.moves, r.lower_ms, r.jumped_tasks,
        r.period_anchors > 1 ? fmt::format(", a period of {} anchors", r.period_anchors)
                             : std::string());
    if (o.repeat > 1) {
      PARASIM_ASSIGN_OR_RETURN(std::string repeat, RepeatReplays(s, so, r, o.repeat));
      res.notes += repeat;
    }
  }
  PARASIM_RETURN_IF_ERROR(WritePictures(o, so, ctx.json, &res));
  return res;
}

Json ToJson(const Result& res) {
  if (res.serving) return ServeJson(*res.serving);
  Json j = RunJson(res.s, res.r, res.goodput ? &*res.goodput : nullptr);
  if (!res.launch.empty()) j.Set("launch", LaunchJson(ExportLaunch(res.s), res.launch));
  return j;
}

// Where the checkpoint interval comes from: Young/Daly's, and what raised it.
std::string IntervalNote(const CheckpointPlan& ck) {
  const char* floor = ck.raised_to == CheckpointPlan::Floor::kStep ? "one step"
                      : ck.raised_to == CheckpointPlan::Floor::kWrite
                          ? "the asynchronous write's time"
                          : nullptr;
  if (!ck.young_daly) return floor ? fmt::format(" (raised to {})", floor) : "";
  return floor ? fmt::format(" (Young/Daly's {} raised to {})", Seconds(ck.formula_s), floor)
               : " (Young/Daly)";
}

std::string GoodputText(const Scenario& s, const StepReport& r, const GoodputReport& g) {
  if (const std::string never = NoRunEnds(g); !never.empty()) {
    return fmt::format("  goodput          none: {}\n", never);
  }
  const CheckpointPlan& ck = g.inputs.checkpoint;
  if (g.runs.wall.mean <= 0) {
    // No run length: the rates alone.
    return fmt::format(
        "  goodput          {:.1f}% of the failure-free rate in the steady state (closed form)\n"
        "  interruptions    {:.2f} unexpected per day (MTBF {}); each costs {} to restart\n"
        "  checkpoints      {} ({} per GPU), {} write of {} every {} of training{}\n",
        100 * g.goodput, g.failures_per_day, Seconds(g.mtbf_s), Seconds(g.inputs.restart_s),
        FormatBytes(Bytes(ck.bytes)), FormatBytes(Bytes(ck.bytes_per_gpu)),
        g.inputs.async ? "async" : "sync", Seconds(ck.write_s), Seconds(ck.interval_s),
        IntervalNote(ck));
  }
  const double days = g.runs.wall.mean / 86400;
  std::string out = fmt::format(
      "  goodput          {:.1f}% of the failure-free rate; effective training time {:.1f}% "
      "(closed form {:.1f}%)\n",
      100 * g.goodput, 100 * g.runs.effective_training_time, 100 * g.analytic_effective_time);
  out += fmt::format(
      "  interruptions    {:.0f} unexpected in {:.1f} days (P10-P90 {:.0f}-{:.0f}; {:.2f} per "
      "day, MTBF {}), {:.0f} planned; each costs {} to restart\n",
      g.runs.interruptions.mean, days, g.runs.interruptions.p10, g.runs.interruptions.p90,
      g.failures_per_day, Seconds(g.mtbf_s), g.runs.planned, Seconds(g.inputs.restart_s));
  out += fmt::format(
      "  checkpoints      {} ({} per GPU), {} write of {} every {} of training{}; lost work "
      "{:.1f} h, stalls {:.1f} h, downtime {:.1f} h\n",
      FormatBytes(Bytes(ck.bytes)), FormatBytes(Bytes(ck.bytes_per_gpu)),
      g.inputs.async ? "async" : "sync", Seconds(ck.write_s), Seconds(ck.interval_s),
      IntervalNote(ck), g.runs.lost_s / 3600, g.runs.stall_s / 3600, g.runs.down_s / 3600);
  if (s.reliability.straggler > 0) {
    out += fmt::format(
        "  stragglers       step P50 {}, P99 {}, mean {} (per-GPU speed spread {:.1f}% over {} "
        "GPUs; failure-free {})\n",
        Seconds(g.steps.p50_s), Seconds(g.steps.p99_s), Seconds(g.steps.mean_s),
        100 * s.reliability.straggler, s.cluster.gpus(), Seconds(r.step_time_s));
  }
  return out;
}

// The pipeline bubble per stage against the schedule's ideal, on one basis (idle time inside
// the step over the step; strategies/step_summary.h), with the unit times its formula takes.
std::string BubbleText(const Layout& l, const StepReport& r) {
  const PipelineSchedule& sched = ScheduleOf(l.schedule);
  const UnitTimes& t = r.unit_times;
  const std::string times =
      sched.ideal_takes_unit_times()
          ? fmt::format(" with F {}, B {}, W {}", Seconds(t.f), Seconds(t.b), Seconds(t.w))
          : "";
  std::string stages;
  const std::vector<double>& b = r.bubble_fraction_per_stage;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 && b.size() > 6) {
      stages += ", ...";
      i = b.size() - 2;
    }
    stages += fmt::format("{}{:.1f}%", i > 0 ? ", " : "", 100 * b[i]);
  }
  return fmt::format(
      "  pipeline bubble  {:.1f}% of the step, mean over stages (per stage {}; idle inside the "
      "step, waits on transfers counted as pp); ideal {:.1f}% ({} = {:.1f}% of the work{})\n",
      100 * r.bubble_fraction, stages, 100 * r.ideal_bubble_fraction,
      sched.IdealBubbleFormula({l.pp, ChunksOf(l), r.micro_batches}), 100 * r.ideal_bubble_of_work,
      times);
}

// Peak memory per stage (the first four and the last two of a long pipeline) and the verdict.
std::string MemoryLine(const StepReport& r) {
  std::string out = "  memory per GPU   ";
  for (size_t i = 0; i < r.peak_memory_bytes.size(); ++i) {
    if (i == 4 && r.peak_memory_bytes.size() > 6) {
      out += ", ...";
      i = r.peak_memory_bytes.size() - 2;  // the last two, as the bubble line gives them
    }
    out += fmt::format("{}{}", i > 0 ? ", " : "", FormatBytes(Bytes(r.peak_memory_bytes[i])));
  }
  return out + fmt::format(" peak per stage of {}: {}\n", FormatBytes(Bytes(r.capacity_bytes)),
                           r.fits ? "fits" : "DOES NOT FIT");
}

std::string TimeToTrainText(const Scenario& s, const StepReport& r, const GoodputReport* g) {
  if (!std::isfinite(r.time_to_train_s)) {
    return fmt::format("  time to train    never: {:.3g} tokens at no progress (goodput above)\n",
                       s.training.tokens);
  }
  return fmt::format(
      "  time to train    {:.3g} tokens in {:.1f} days{}, {} GPU-hours ({} per 10^12 tokens){}\n",
      s.training.tokens, r.time_to_train_s / 86400,
      g ? fmt::format(" (P10-P90 {:.1f}-{:.1f}; failure-free {:.1f})",
                      g->time_to_train_p10_s / 86400, g->time_to_train_p90_s / 86400,
                      g->ideal_time_to_train_s / 86400)
        : "",
      Human(r.gpu_hours), Human(GpuHoursPerTrillionTokens(r, s.training.tokens)),
      s.cluster.gpu_hour_cost > 0 ? fmt::format(", cost {}", Human(r.cost)) : "");
}

// Critical path, calibration and warnings: the lines after the figures.
std::string FootText(const Scenario& s, const StepReport& r) {
  std::string out;
  if (!r.critical_path.empty()) out += fmt::format("  critical path    {}\n", r.critical_path);
  if (!s.cluster.calibration.empty()) {
    out += fmt::format("  calibration      {}: {}\n", s.cluster.calibration,
                       s.cluster.calibrated.empty()
                           ? std::string("no value replaced")
                           : fmt::format("{}", fmt::join(s.cluster.calibrated, ", ")));
  }
  if (r.warnings.empty()) return out + "  warnings         none\n";
  for (size_t i = 0; i < r.warnings.size(); ++i) {
    out += fmt::format("  {}  {}\n", i == 0 ? "warnings       " : "               ", r.warnings[i]);
  }
  return out;
}

std::string ToText(const Result& res) {
  if (res.serving) return ServeText(*res.serving);
  const Scenario& s = res.s;
  const StepReport& r = res.r;
  const GoodputReport* g = res.goodput ? &*res.goodput : nullptr;
  const double gpus = static_cast<double>(s.cluster.gpus());
  std::string out = fmt::format("{}: {} on {} x {}\n", ScenarioName(s), s.model.id,
                                s.cluster.gpus(), s.cluster.gpu.name);
  out += fmt::format("layout: {}\n\n", FormatLayout(s.layout, s.training, LayoutStyle::kSentence));
  out += fmt::format("  step time        {}\n", Seconds(r.step_time_s));
  out += fmt::format("  throughput       {} tokens/s ({} tokens/s per GPU)\n",
                     Human(r.tokens_per_s), Human(r.tokens_per_s / gpus));
  out +=
      fmt::format("  model FLOPs      {:.1f} TFLOP/s per GPU, MFU {:.1f}%  (excludes recompute)\n",
                  r.tflops_per_gpu, 100 * r.mfu);
  out +=
      fmt::format("  hardware FLOPs   {:.1f} TFLOP/s per GPU, HFU {:.1f}%  (includes recompute)\n",
                  r.hw_tflops_per_gpu, 100 * r.hfu);
  if (s.layout.pp > 1) out += BubbleText(s.layout, r);
  const ExposedComm& e = r.exposed;
  out += fmt::format(
      "  exposed comm     {} per step = {:.1f}% (tp {}, cp {}, ep {}, pp {}, dp {}; time the GPU "
      "waits on it)\n",
      Seconds(e.total()), r.step_time_s > 0 ? 100 * e.total() / r.step_time_s : 0.0, Seconds(e.tp),
      Seconds(e.cp), Seconds(e.ep), Seconds(e.pp), Seconds(e.dp));
  if (e.host >= 0.005 * r.step_time_s) {
    out += fmt::format(
        "  host issue       {} per step = {:.1f}% (the CPU issues kernels while the GPU runs "
        "nothing)\n",
        Seconds(e.host), r.step_time_s > 0 ? 100 * e.host / r.step_time_s : 0.0);
  }
  out += MemoryLine(r);
  if (g) out += GoodputText(s, r, *g);
  if (s.training.tokens > 0) out += TimeToTrainText(s, r, g);
  out += FootText(s, r);
  return res.launch.empty() ? out : out + LaunchText(ExportLaunch(s), res.launch);
}

std::string Notes(const Result& res) { return res.serving ? ServeNotes(*res.serving) : res.notes; }

}  // namespace

Verb RunVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "run",
      .help = "predict one training step of a scenario's layout",
      .flags =
          {Arg(&O::scenario, "file", "scenario YAML file").Python("scenario").Required(),
           SetFlag(&O::sets), JsonFlag<O>(),
           Opt(&O::timing, "--timing",
               "print replay_ms (lowering + replay at sweep granularity) on stderr"),
           Opt(&O::repeat, "--repeat",
               "with --timing: lower and replay N times in this process and print the first, "
               "median and fastest (the replay-speed benchmark)")
               .Range(1, 100000),
           Opt(&O::full, "--full", "replay every rank instead of one per pipeline stage"),
           Opt(&O::trace, "--trace", "write an op-level Chrome trace (Perfetto) to FILE").Output(),
           Opt(&O::svg, "--svg", "write the pipeline timeline of the step as SVG to FILE").Output(),
           Opt(&O::ops, "--ops",
               "replay at op granularity (one task per op) instead of per micro-batch phase"),
           Opt(&O::launch, "--launch",
               "megatron or torchtitan: print the layout as the Megatron-LM flags or the "
               "torchtitan config that launch it")},
      .run = Run,
      .json = ToJson,
      .text = ToText,
      .notes = Notes,
  });
}

}  // namespace parasim
