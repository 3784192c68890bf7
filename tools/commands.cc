#include "tools/commands.h"

#include <fmt/core.h>

#include "models/model_spec.h"
#include "scenarios/scenario.h"
#include "sim/json.h"
#include "sim/parse_units.h"
#include "strategies/memory.h"

namespace parasim {
namespace {

Json LayoutJson(const Scenario& s) {
  const Layout& l = s.layout;
  Json j = Json::Object();
  j.Set("tp", l.tp).Set("pp", l.pp).Set("dp", l.dp).Set("cp", l.cp).Set("ep", l.ep);
  j.Set("sp", l.sp).Set("zero", l.zero).Set("schedule", std::string(ScheduleName(l.schedule)));
  j.Set("virtual_stages", l.virtual_stages);
  j.Set("micro_batch", s.training.micro_batch).Set("global_batch", s.training.global_batch);
  j.Set("recompute", std::string(RecomputeName(s.training.recompute)));
  return j;
}

}  // namespace

Status RunCommand(const CommonOptions& opt) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenario(opt.file, opt.sets, cat));
  ParamCounts pc = CountParams(s.model, s.training.seq_len);
  if (opt.json) {
    Json j = Json::Object();
    j.Set("scenario", s.name).Set("gpus", s.cluster.gpus()).Set("params", pc.total);
    j.Set("layout", LayoutJson(s));
    fmt::print("{}\n", j.Dump());
    return Status::Ok();
  }
  fmt::print("scenario: {}\n", s.name.empty() ? s.file : s.name);
  fmt::print("model:    {} ({:.2f}B parameters)\n", s.model.id, pc.total / 1e9);
  fmt::print("cluster:  {} x {} GPUs = {} x {}\n", s.cluster.nodes, s.cluster.gpus_per_node,
             s.cluster.gpus(), s.cluster.gpu.name);
  fmt::print("layout:   TP{} PP{} DP{} CP{} EP{}\n", s.layout.tp, s.layout.pp, s.layout.dp,
             s.layout.cp, s.layout.ep);
  return Status::Ok();
}

Status MemoryCommand(const CommonOptions& opt) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenario(opt.file, opt.sets, cat));
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
    fmt::print("{}\n", j.Dump());
    return Status::Ok();
  }
  fmt::print("{}: memory per GPU ({} x {}, {})\n", s.name.empty() ? s.file : s.name,
             s.cluster.gpus(), s.cluster.gpu.id, FormatBytes(s.cluster.gpu.memory));
  fmt::print("layout TP{} PP{} DP{} CP{} EP{}, ZeRO-{}, recompute {}, micro-batch {}\n",
             s.layout.tp, s.layout.pp, s.layout.dp, s.layout.cp, s.layout.ep, s.layout.zero,
             RecomputeName(s.training.recompute), s.training.micro_batch);
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
    fmt::print("{}\n", j.Dump());
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
