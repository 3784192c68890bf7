#include "tests/fuzz/plan_property.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/yaml_reader.h"
#include "strategies/step.h"
#include "strategies/sweep.h"

namespace parasim {
namespace {

// Reads choices from the bytes; past their end every choice is the first.
class Choices {
 public:
  Choices(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t Pick(size_t n) {
    if (n <= 1) return 0;
    const unsigned v = pos_ < size_ ? data_[pos_] : 0;
    ++pos_;
    return v % n;
  }
  template <typename T>
  const T& From(const std::vector<T>& v) {
    return v[Pick(v.size())];
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

const Catalogs& TheCatalogs() {
  static const Catalogs cat = *LoadCatalogs();
  return cat;
}

std::vector<int> Divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// Models small enough that a replay and a small sweep take milliseconds.
const std::vector<std::string> kModels = {"gpt3-1.3b",    "llama2-7b",     "llama3-8b", "gpt3-13b",
                                          "mixtral-8x7b", "qwen3-30b-a3b", "llama2-70b"};

}  // namespace

std::string PlanScenarioText(const uint8_t* data, size_t size) {
  Choices c(data, size);
  const Catalogs& cat = TheCatalogs();
  const GpuSpec& gpu = cat.hardware.gpus[c.Pick(cat.hardware.gpus.size())];
  const int per_node = gpu.server.gpus > 0 ? gpu.server.gpus : 8;
  const int nodes = 1 + static_cast<int>(c.Pick(std::max(1, 64 / per_node)));
  const int gpus = nodes * per_node;
  const std::string model = c.From(kModels);
  const int tp = c.From(Divisors(std::min(per_node, 8)));
  const int pp = c.From(Divisors(gpus / tp));
  const int dp = gpus / tp / pp;
  const int mb = 1 + static_cast<int>(c.Pick(4));
  const int micro_batches = 1 + static_cast<int>(c.Pick(16));
  const int seq = c.From(std::vector<int>{512, 1024, 2048, 4096});
  const std::string recompute = c.From(std::vector<std::string>{"none", "selective", "full"});
  const int zero = static_cast<int>(c.Pick(4));
  const std::string schedule = c.From(std::vector<std::string>{"1f1b", "gpipe", "zb-h1"});
  const bool fp8 = gpu.Peak(Dtype::kFp8).flops_per_second() > 0 && c.Pick(3) == 0;
  std::string text = fmt::format("cluster:\n  gpu: {}\n  nodes: {}\n  gpus_per_node: {}\n", gpu.id,
                                 nodes, per_node);
  if (nodes > 1) text += fmt::format("  inter_node: {}\n", gpu.server.inter);
  text += fmt::format(
      "model: {}\ntraining: {{seq_len: {}, global_batch: {}, micro_batch: {}, precision: {}, "
      "recompute: {}}}\nparallelism: {{tp: {}, pp: {}, dp: {}, zero: {}, schedule: {}}}\n",
      model, seq, dp * mb * micro_batches, mb, fp8 ? "fp8" : "bf16", recompute, tp, pp, dp, zero,
      schedule);
  if (c.Pick(2) == 0) {
    text += "sweep: {tp: auto, pp: auto, micro_batch: [1, 2], recompute: [none, full], top: 5}\n";
  }
  return text;
}

namespace {

// The first figure of a report that is not a finite, non-negative number, or "".
std::string BadFigure(const StepReport& r) {
  const std::vector<std::pair<const char*, double>> figures = {{"step_time_s", r.step_time_s},
                                                               {"tokens_per_s", r.tokens_per_s},
                                                               {"mfu", r.mfu},
                                                               {"hfu", r.hfu},
                                                               {"bubble", r.bubble_fraction},
                                                               {"exposed.tp", r.exposed.tp},
                                                               {"exposed.cp", r.exposed.cp},
                                                               {"exposed.ep", r.exposed.ep},
                                                               {"exposed.pp", r.exposed.pp},
                                                               {"exposed.dp", r.exposed.dp}};
  for (const auto& [name, v] : figures) {
    if (!std::isfinite(v) || v < 0) return fmt::format("{} = {}", name, v);
  }
  for (double b : r.peak_memory_bytes) {
    if (!std::isfinite(b) || b < 0) return fmt::format("peak memory {}", b);
  }
  if (r.step_time_s <= 0) return "a step of no time";
  // Model FLOPs over peak: 1 is the whole GPU (rounding aside).
  if (r.mfu > 1 + 1e-9 || r.hfu > 1 + 1e-9) return fmt::format("MFU {} HFU {}", r.mfu, r.hfu);
  return "";
}

// A refusal must be located at the file (or be the replay's range, which run locates).
bool Located(const Status& st) {
  return st.message().find("plan.yaml:") != std::string::npos ||
         st.message().find("the step runs past") != std::string::npos;
}

std::string CheckSweep(const Scenario& s) {
  SweepOptions so;
  so.jobs = 1;
  so.max_layouts = 4096;
  StatusOr<SweepOutcome> out = RunSweep(s, so);
  if (!out.ok()) return Located(out.status()) ? "" : "sweep: " + out.status().message();
  for (size_t i = 0; i < out->ranked.size(); ++i) {
    const SweepEntry& e = out->ranked[i];
    if (!std::isfinite(e.step_time_s) || e.step_time_s <= 0 || !(e.mfu <= 1 + 1e-9)) {
      return fmt::format("sweep: {} has step {} MFU {}", e.key, e.step_time_s, e.mfu);
    }
    // Throughput objective: the best is at least as fast as any layout ranked after it.
    if (e.tokens_per_s > out->ranked[0].tokens_per_s * (1 + 1e-12) &&
        s.sweep->objective == Objective::kThroughput) {
      return fmt::format("sweep: {} ({} tokens/s) beats the best {} ({})", e.key, e.tokens_per_s,
                         out->ranked[0].key, out->ranked[0].tokens_per_s);
    }
  }
  for (const StepReport& r : out->top_reports) {
    if (std::string bad = BadFigure(r); !bad.empty()) return "sweep leader: " + bad;
  }
  return "";
}

}  // namespace

std::string CheckPlanProperties(const uint8_t* data, size_t size) {
  const std::string text = PlanScenarioText(data, size);
  const auto fail = [&](const std::string& why) { return why + "\nscenario:\n" + text; };
  StatusOr<YAML::Node> root = ParseYaml(text, "plan.yaml");
  if (!root.ok()) return fail("the generated YAML does not parse: " + root.status().message());
  YamlContext ctx{"plan.yaml", {}};
  StatusOr<Scenario> s = ScenarioFromNode(*root, ctx, TheCatalogs());
  if (!s.ok()) return Located(s.status()) ? "" : fail("unlocated: " + s.status().message());
  if (s->sweep)
    return [&] {
      const std::string why = CheckSweep(*s);
      return why.empty() ? why : fail(why);
    }();
  StatusOr<StepReport> r = SimulateStep(s->model, s->training, s->layout, s->cluster, {});
  if (!r.ok()) return Located(r.status()) ? "" : fail("run: " + r.status().message());
  if (std::string bad = BadFigure(*r); !bad.empty()) return fail("run: " + bad);
  return "";
}

}  // namespace parasim
