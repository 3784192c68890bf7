#include "tests/invariants/scenario_gen.h"

#include <fmt/core.h>

#include <algorithm>

namespace parasim::testing {

ScenarioGen::ScenarioGen(uint64_t seed, const Catalogs& catalogs)
    : state_(seed), catalogs_(catalogs) {
  for (const GpuSpec& g : catalogs.hardware.gpus) gpus_.push_back(g.id);
  for (const FabricSpec& f : catalogs.hardware.fabrics) {
    (f.kind == FabricKind::kIntra ? intra_ : inter_).push_back(f.id);
  }
  for (std::string_view id : catalogs.models.Ids()) models_.emplace_back(id);
}

uint64_t ScenarioGen::Bits() {
  // splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014).
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t ScenarioGen::Below(int64_t n) {
  return static_cast<int64_t>(Bits() % static_cast<uint64_t>(n));
}

std::string ScenarioGen::Draw() {
  const std::string& gpu_id = Pick(gpus_);
  const GpuSpec& gpu = *catalogs_.hardware.FindGpu(gpu_id);
  const int64_t gpn = Pick<int64_t>({1, 2, 4, 8}), nodes = Pick<int64_t>({1, 1, 2, 4});
  const std::string& model_id = Pick(models_);
  const ModelSpec& model = *catalogs_.models.Find(model_id);
  const int64_t gpus = gpn * nodes;
  // TP within a node, dividing the heads; PP up to 8 stages; CP 2 now and then; DP the rest.
  std::vector<int64_t> tps;
  for (int64_t t = 1; t <= gpn; t *= 2) {
    if (model.heads % t == 0) tps.push_back(t);
  }
  const int64_t tp = Pick(tps);
  std::vector<int64_t> pps;
  for (int64_t p = 1; p <= std::min<int64_t>(8, gpus / tp); p *= 2) {
    if ((gpus / tp) % p == 0) pps.push_back(p);
  }
  const int64_t pp = Below(3) == 0 ? 1 : Pick(pps);
  const int64_t cp = (gpus / tp / pp) % 2 == 0 && Below(4) == 0 ? 2 : 1;
  const int64_t dp = gpus / tp / pp / cp;
  static const std::vector<std::string> kSchedules = {
      "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zb-v", "dualpipe-v", "dualpipe"};
  const std::string schedule = pp > 1 ? Pick(kSchedules) : "1f1b";
  int64_t chunks = 1;
  if (schedule == "interleaved-1f1b") chunks = Pick<int64_t>({2, 3, 4});
  if (schedule == "zb-v" || schedule == "dualpipe-v" || schedule == "dualpipe") chunks = 2;
  const int64_t layers = pp * chunks * Pick<int64_t>({1, 2, 3});
  const int64_t micro_batch = Pick<int64_t>({1, 1, 2});
  const int64_t micro_batches = 1 + Below(4 * pp + 2);
  const bool moe = model.is_moe();
  const int64_t ep = moe ? Pick<int64_t>({1, 1, 2, 4, 8}) : 1;
  const bool sp = tp > 1 && Below(2) == 0;
  const bool fp8 = gpu.Peak(Dtype::kFp8).flops_per_second() > 0 && Below(6) == 0;
  std::string cluster = fmt::format("{{gpu: {}, nodes: {}, gpus_per_node: {}, intra_node: {}",
                                    gpu_id, nodes, gpn, Pick(intra_));
  if (nodes > 1) cluster += fmt::format(", inter_node: {}", Pick(inter_));
  std::string parallelism =
      fmt::format("{{tp: {}, pp: {}, dp: {}, cp: {}, ep: {}, sp: {}, zero: {}, schedule: {}", tp,
                  pp, dp, cp, ep, sp ? "true" : "false", Below(4), schedule);
  if (chunks > 1 && schedule == "interleaved-1f1b") {
    parallelism += fmt::format(", virtual_stages: {}", chunks);
  }
  if (moe && sp && Below(3) == 0) parallelism += ", etp: 1";
  if (pp > 1 && chunks == 1 && Below(8) == 0) parallelism += ", account_for: [loss]";
  if (Below(5) == 0) {
    parallelism += fmt::format(", overlap: {{tp: {}}}", Below(2) == 0 ? "false" : "true");
  }
  static const std::vector<std::string> kRecompute = {
      "none", "selective", "full", "none", "selective", "full", "deepseek", "selective-op"};
  // One draw a line (the order of a call's arguments is the compiler's).
  const int64_t seq_len = Pick<int64_t>({256, 512, 1024, 2048});
  const std::string& recompute = Pick(kRecompute);
  const char* attention = Below(10) == 0 ? "standard" : "flash";
  return fmt::format(
      "name: drawn\ncluster: {}}}\nmodel: {{extends: {}, layers: {}}}\ntraining: {{seq_len: {}, "
      "global_batch: {}, micro_batch: {}, recompute: {}, precision: {}, attention: {}}}\n"
      "parallelism: {}}}\n",
      cluster, model_id, layers, seq_len, dp * micro_batch * micro_batches, micro_batch, recompute,
      fp8 ? "fp8" : "bf16", attention, parallelism);
}

DrawnScenario ScenarioGen::Next() {
  for (;;) {
    DrawnScenario d;
    d.yaml = Draw();
    StatusOr<Scenario> s = LoadScenario(YamlInput("drawn.yaml", d.yaml), {}, catalogs_);
    if (!s.ok()) {
      ++refused_;
      continue;
    }
    d.scenario = std::move(*s);
    return d;
  }
}

}  // namespace parasim::testing
