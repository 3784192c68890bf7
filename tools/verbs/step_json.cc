#include "tools/verbs/step_json.h"

#include <algorithm>

#include "strategies/layout_format.h"
#include "strategies/schedule.h"
#include "strategies/sweep_codesign.h"
#include "strategies/sweep_keys.h"

namespace parasim {

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
  if (l.microbatch_group > 0) j.Set("microbatch_group", l.microbatch_group);
  if (l.grad_reduce != Layout::GradReduce::kAuto) {
    j.Set("grad_reduce", std::string(GradReduceName(l.grad_reduce)));
  }
  if (l.cp_comm != Layout::CpComm::kRing) j.Set("cp_comm", std::string(CpCommName(l.cp_comm)));
  if (l.zero == 3 && !l.zero3_copies) j.Set("zero3_copies", false);
  if (l.zero == 3 && l.zero3_reshard != Layout::Zero3Reshard::kForward) {
    j.Set("zero3_reshard", std::string(Zero3ReshardName(l.zero3_reshard)));
  }
  if (l.param_gather != Layout::ParamGather::kAuto) {
    j.Set("param_gather", std::string(ParamGatherName(l.param_gather)));
  }
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

namespace {

// The goodput model's part of the run object.
void SetGoodput(const Scenario& s, const GoodputReport& g, Json* j) {
  if (s.training.tokens > 0) {
    j->Set("ideal_time_to_train_s", g.ideal_time_to_train_s);
    j->Set("time_to_train_p10_s", g.time_to_train_p10_s);
    j->Set("time_to_train_p90_s", g.time_to_train_p90_s);
  }
  j->Set("goodput", g.goodput).Set("expected_interruptions", g.runs.interruptions.mean);
  j->Set("effective_training_time", g.runs.effective_training_time);
  j->Set("step_time_p99_s", g.steps.p99_s).Set("reliability", GoodputJson(g));
}

}  // namespace

Json RunJson(const Scenario& s, const StepReport& r, const GoodputReport* g) {
  Json j = Json::Object();
  j.Set("scenario", s.name).Set("gpus", s.cluster.gpus());
  j.Set("step_time_s", r.step_time_s).Set("tokens_per_s", r.tokens_per_s);
  j.Set("tflops_per_gpu", r.tflops_per_gpu).Set("hw_tflops_per_gpu", r.hw_tflops_per_gpu);
  j.Set("mfu", r.mfu).Set("hfu", r.hfu);
  j.Set("bubble_fraction", r.bubble_fraction);
  Json bubbles = Json::Array();
  for (double b : r.bubble_fraction_per_stage) bubbles.Push(b);
  j.Set("bubble_fraction_per_stage", bubbles);
  j.Set("ideal_bubble_fraction", r.ideal_bubble_fraction);
  j.Set("ideal_bubble_of_work", r.ideal_bubble_of_work);
  j.Set("micro_batches", r.micro_batches);
  j.Set("fits", r.fits);
  Json peaks = Json::Array();
  for (double b : r.peak_memory_bytes) peaks.Push(b);
  j.Set("peak_memory_bytes", peaks).Set("memory_capacity_bytes", r.capacity_bytes);
  Json allocated = Json::Array();
  for (double b : r.peak_allocated_bytes) allocated.Push(b);
  j.Set("peak_allocated_bytes", allocated);
  Json e = Json::Object();
  e.Set("tp", r.exposed.tp).Set("cp", r.exposed.cp).Set("ep", r.exposed.ep);
  e.Set("pp", r.exposed.pp).Set("dp", r.exposed.dp);
  j.Set("exposed_comm_s", e);
  j.Set("host_issue_s", r.exposed.host);
  Json comp = Json::Array();
  for (double c : r.stage_compute_s) comp.Push(c);
  j.Set("stage_compute_s", comp);
  // The busiest stage's step part by part: they add up to step_time_s.
  Json parts = Json::Object();
  for (const StepPartTime& p : StepParts(r)) parts.Set(std::string(StepPartKey(p.part)), p.s);
  j.Set("busiest_stage", r.busiest_stage).Set("busiest_stage_parts_s", parts);
  j.Set("model_flops_per_step", r.model_flops_per_step);
  j.Set("hw_flops_per_step", r.hw_flops_per_step);
  if (s.training.tokens > 0) {
    j.Set("time_to_train_s", r.time_to_train_s).Set("gpu_hours", r.gpu_hours);
    if (s.cluster.gpu_hour_cost > 0) j.Set("cost", r.cost);
  }
  if (g) SetGoodput(s, *g, &j);
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

Json HeldKeysJson(const Scenario& s) {
  Json out = Json::Object();
  if (!s.sweep) return out;
  const Json layout = LayoutJson(s);
  for (const SweepKey& k : SweepKeys()) {
    const bool swept = std::any_of(s.sweep->axes.begin(), s.sweep->axes.end(),
                                   [&](const auto& a) { return a.first == k.name; });
    if (swept || (k.name == "dp" && s.dp_auto) ||
        (k.name == "global_batch" && s.sweep->global_batch_max > 0)) {
      continue;
    }
    for (const auto& [name, v] : layout.fields()) {
      if (name == k.name) out.Set(name, v);
    }
  }
  return out;
}

namespace {

// One replayed layout as a flat record.
Json FlatLayout(const Scenario& s, const SweepEntry& e, Json rank) {
  Json o = Json::Object();
  o.Set("rank", std::move(rank));
  const std::string layout = FormatLayout(e.layout, e.training, LayoutStyle::kShort);
  if (s.sweep && !s.sweep->hardware.empty()) {
    o.Set("hardware", s.sweep->hardware[e.hardware].label);
  }
  o.Set("layout", layout).Set("fits", e.fits);
  const Json keys = LayoutJson(WithLayout(s, e));
  for (const auto& [name, v] : keys.fields()) {
    if (v.kind() != Json::Kind::kArray) {
      o.Set(name, v);
      continue;
    }
    std::string joined;  // account_for: "embedding,loss"
    for (const Json& x : v.items()) joined += (joined.empty() ? "" : ",") + x.string_value();
    o.Set(name, joined);
  }
  o.Set("step_time_s", e.step_time_s).Set("tokens_per_s", e.tokens_per_s).Set("mfu", e.mfu);
  o.Set("bubble_fraction", e.bubble);
  o.Set("exposed_tp_s", e.exposed.tp).Set("exposed_cp_s", e.exposed.cp);
  o.Set("exposed_ep_s", e.exposed.ep).Set("exposed_pp_s", e.exposed.pp);
  o.Set("exposed_dp_s", e.exposed.dp).Set("peak_memory_bytes", e.peak_memory_bytes);
  // The goodput factor exists where the objective ranks by it; elsewhere it is unknown, not 1
  // (a throughput sweep's rows had all read 1).
  o.Set("compute_s", e.compute_s).Set("goodput", RanksByGoodput(s, e) ? Json(e.goodput) : Json());
  return o;
}

}  // namespace

Json EveryLayoutJson(const Scenario& s, const SweepOutcome& r) {
  Json out = Json::Array();
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    out.Push(FlatLayout(s, r.ranked[i], Json(static_cast<int64_t>(i + 1))));
  }
  for (const SweepEntry& e : r.replayed_over_memory) out.Push(FlatLayout(s, e, Json()));
  return out;
}

}  // namespace parasim
