// parasim catalog: the catalog's GPUs, fabrics and models (hardware/, models/).
#include <fmt/core.h>

#include <algorithm>

#include "models/model_spec.h"
#include "scenarios/scenario.h"
#include "sim/parse_units.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  std::vector<std::string> sets;  // accepted as by every verb; the catalog has no keys to set
};

struct Result {
  Catalogs cat;
  std::vector<ValueSource> gpu_sources, fabric_sources;  // the comment beside each value
};

StatusOr<Result> Run(const Options&, const VerbContext&) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  return Result{std::move(cat), GpuSources(), FabricSources()};
}

// An entry's sources as a JSON object, key -> source.
Json SourcesJson(const std::vector<ValueSource>& all, const std::string& entry) {
  Json o = Json::Object();
  for (const ValueSource& v : all) {
    if (v.entry == entry) o.Set(v.key, v.source);
  }
  return o;
}

// The sources of the values the text's tables show, one line per entry.
std::string SourcesText(const std::vector<ValueSource>& all, const std::vector<std::string>& keys) {
  std::string out;
  std::string entry;
  for (const ValueSource& v : all) {
    if (std::find(keys.begin(), keys.end(), v.key) == keys.end()) continue;
    out += v.entry == entry
               ? fmt::format("; {}: {}", v.key, v.source)
               : fmt::format("{}  {}: {}: {}", out.empty() ? "" : "\n", v.entry, v.key, v.source);
    entry = v.entry;
  }
  return out.empty() ? out : out + "\n";
}

Json GpusJson(const Catalogs& cat, const std::vector<ValueSource>& sources) {
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
    o.Set("peak_tflops", peak).Set("sms", g.sms).Set("sources", SourcesJson(sources, g.id));
    gpus.Push(o);
  }
  return gpus;
}

Json ToJson(const Result& res) {
  const Catalogs& cat = res.cat;
  Json fabrics = Json::Array();
  for (const auto& f : cat.hardware.fabrics) {
    Json o = Json::Object();
    o.Set("id", f.id).Set("kind", f.kind == FabricKind::kIntra ? "intra" : "inter");
    o.Set("bandwidth_bytes_per_s", f.bandwidth.bytes_per_second());
    o.Set("latency_s", f.latency.seconds()).Set("efficiency", f.efficiency);
    o.Set("sources", SourcesJson(res.fabric_sources, f.id));
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
  j.Set("gpus", GpusJson(cat, res.gpu_sources)).Set("fabrics", fabrics).Set("models", models);
  return j;
}

std::string ToText(const Result& res) {
  const Catalogs& cat = res.cat;
  std::string out = "GPUs (dense peaks, datasheet; memory as nvidia-smi reports, GiB = 2^30 B)\n" +
                    fmt::format("  {:<16} {:>9} {:>11} {:>11} {:>11} {:>5}\n", "id", "memory",
                                "HBM", "bf16", "fp8", "SMs");
  for (const auto& g : cat.hardware.gpus) {
    double fp8 = g.Peak(Dtype::kFp8).tflops();
    out += fmt::format("  {:<16} {:>9} {:>11} {:>11} {:>11} {:>5}\n", g.id, FormatBytes(g.memory),
                       FormatBandwidth(g.hbm_bandwidth),
                       fmt::format("{:.0f} TF/s", g.Peak(Dtype::kBf16).tflops()),
                       fp8 > 0 ? fmt::format("{:.0f} TF/s", fp8) : "-", g.sms);
  }
  out += "\nSources of the GPUs' figures (hardware/catalog/gpus.yaml)\n" +
         SourcesText(res.gpu_sources, {"memory", "hbm_bandwidth", "bf16", "fp8", "sms"});
  out += "\nFabrics (bandwidth per direction, per GPU for intra-node, per NIC for inter-node)\n";
  out += fmt::format("  {:<14} {:<6} {:>11} {:>9} {:>11}\n", "id", "kind", "bandwidth", "latency",
                     "bus eff.");
  for (const auto& f : cat.hardware.fabrics) {
    out += fmt::format("  {:<14} {:<6} {:>11} {:>9} {:>10.0f}%\n", f.id,
                       f.kind == FabricKind::kIntra ? "intra" : "inter",
                       FormatBandwidth(f.bandwidth), FormatDuration(f.latency), f.efficiency * 100);
  }
  out += "\nSources of the fabrics' figures (hardware/catalog/fabrics.yaml)\n" +
         SourcesText(res.fabric_sources, {"bandwidth", "latency", "efficiency"});
  out += "\nModels (parameters computed from the architecture)\n";
  out += fmt::format("  {:<14} {:>6} {:>7} {:>6} {:>4} {:>7} {:>10} {:>10}\n", "id", "layers",
                     "hidden", "heads", "kv", "vocab", "params", "active");
  for (const auto& m : cat.models.models) {
    ParamCounts pc = CountParams(m);
    out +=
        fmt::format("  {:<14} {:>6} {:>7} {:>6} {:>4} {:>7} {:>9.2f}B {:>9.2f}B\n", m.id, m.layers,
                    m.hidden, m.heads, m.kv(), m.vocab, pc.total / 1e9, pc.active / 1e9);
  }
  out += "\nSources of the models (models/catalog/models.yaml)\n";
  for (const auto& m : cat.models.models) out += fmt::format("  {}: {}\n", m.id, m.source);
  return out;
}

}  // namespace

Verb CatalogVerb() {
  return MakeVerb<Options, Result>({
      .name = "catalog",
      .help = "list catalog GPUs, fabrics and models",
      .flags = {SetFlag(&Options::sets), JsonFlag<Options>()},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
