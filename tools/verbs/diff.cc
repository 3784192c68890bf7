// parasim diff: two what-ifs side by side (tools/diff.h): step time by component, memory per
// stage, MFU, and the one-line reason the slower one is behind.
#include "tools/diff.h"

#include <fmt/core.h>

#include <optional>

#include "strategies/goodput.h"
#include "tools/text.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/step_json.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  Document a, b;  // b empty: A again, under --set-b
  std::vector<std::string> sets, sets_a, sets_b;
};

struct Result {
  Scenario a, b;
  StepReport ra, rb;
  std::optional<GoodputReport> ga, gb;
  StepDiff d;
};

// One side's step, with its time to train, GPU-hours and cost through the goodput model where
// the scenario models it, as `run` gives them.
Status Side(const Scenario& s, StepReport* r, std::optional<GoodputReport>* g) {
  LoweredStep lowered;
  PARASIM_ASSIGN_OR_RETURN(*r,
                           SimulateStep(s.model, s.training, s.layout, s.cluster, {}, &lowered));
  for (std::string& advice : StepAdvice(s.model, s.training, s.layout, s.cluster, *r)) {
    r->warnings.push_back(std::move(advice));
  }
  if (GoodputModelled(s)) {
    PARASIM_ASSIGN_OR_RETURN(*g, ModelGoodput(s, r->step_time_s, lowered));
    WithGoodput(s, **g, r);
    if (!(*g)->runs.note.empty()) r->warnings.push_back((*g)->runs.note);
  }
  return Status::Ok();
}

StatusOr<Result> Run(const Options& o, const VerbContext&) {
  PARASIM_ASSIGN_OR_RETURN(ScenarioPair p, LoadPair({o.a, o.b, o.sets, o.sets_a, o.sets_b}));
  Result res{.a = std::move(p.a), .b = std::move(p.b)};
  PARASIM_RETURN_IF_ERROR(Side(res.a, &res.ra, &res.ga));
  PARASIM_RETURN_IF_ERROR(Side(res.b, &res.rb, &res.gb));
  res.d = DiffSteps(res.a, res.ra, res.b, res.rb);
  return res;
}

Json ToJson(const Result& res) {
  Json j = Json::Object();
  j.Set("a", RunJson(res.a, res.ra, res.ga ? &*res.ga : nullptr))
      .Set("b", RunJson(res.b, res.rb, res.gb ? &*res.gb : nullptr));
  Json rows = Json::Array();
  for (const DiffRow& row : res.d.rows) {
    Json o = Json::Object();
    o.Set("what", row.what).Set("unit", std::string(DiffUnitName(row.unit)));
    o.Set("a", row.in_a ? Json(row.a) : Json());
    o.Set("b", row.in_b ? Json(row.b) : Json());
    if (row.step_part) o.Set("step_part", true);
    rows.Push(o);
  }
  j.Set("rows", rows).Set("reason", res.d.reason);
  return j;
}

std::string ToText(const Result& res) {
  const StepDiff& d = res.d;
  std::string out = fmt::format("A  {}: {}\n   {}\n", ScenarioName(res.a), d.a_cluster, d.a_layout);
  out += fmt::format("B  {}: {}\n   {}\n\n", ScenarioName(res.b), d.b_cluster, d.b_layout);
  out += fmt::format("{:<28} {:>18} {:>18}  {}\n", "", "A", "B", "change (B - A)");
  bool parts = false;
  for (const DiffRow& row : d.rows) {
    if (row.step_part && !parts) {
      out += "the busiest stage's step, part by part (the parts add up to the step time):\n";
    }
    parts = row.step_part;
    out += fmt::format("{:<28} {:>18} {:>18}  {}\n", (parts ? "  " : "") + row.what,
                       DiffValue(row, false), DiffValue(row, true), DiffChange(row));
  }
  return out + fmt::format("\n{}\n", d.reason);
}

}  // namespace

Verb DiffVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "diff",
      .help = "two what-ifs side by side: step time by component, memory per stage, MFU, why",
      .flags = {Arg(&O::a, "file", "scenario A").Python("a").Required(),
                Arg(&O::b, "b", "scenario B (default: A again, under --set-b)"),
                SetFlag(&O::sets, "override a key of both sides (repeatable)"),
                Opt(&O::sets_a, "--set-a", "override a key of A only, e.g. parallelism.tp=4"),
                Opt(&O::sets_b, "--set-b", "override a key of B only, e.g. parallelism.tp=8"),
                JsonFlag<O>()},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
