#include "hardware/spec.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sim/enum_names.h"
#include "sim/yaml_reader.h"

extern const char kGpusYaml[];
extern const char kFabricsYaml[];

namespace parasim {

namespace {
constexpr EnumNames<Dtype, kNumDtypes> kDtypes("dtype", {{{Dtype::kFp32, "fp32"},
                                                          {Dtype::kTf32, "tf32"},
                                                          {Dtype::kFp16, "fp16"},
                                                          {Dtype::kBf16, "bf16"},
                                                          {Dtype::kFp8, "fp8"}}});
}  // namespace

std::string_view DtypeName(Dtype d) { return kDtypes.Name(d); }
StatusOr<Dtype> ParseDtype(std::string_view s) { return kDtypes.Parse(s); }
std::vector<std::string_view> DtypeNames() { return kDtypes.Names(); }

double DtypeBytes(Dtype d) {
  switch (d) {
    case Dtype::kFp32:
    case Dtype::kTf32:
      return 4;
    case Dtype::kFp16:
    case Dtype::kBf16:
      return 2;
    case Dtype::kFp8:
      return 1;
  }
  return 4;
}

namespace {

// Accepted ranges of a GPU's and a fabric's rates and times, inline or in the catalog. They are
// not model constants but bounds on what a description may say, each at least two orders of
// magnitude beyond the catalog's own extremes, so that a step stays inside what the replay
// represents (sim/units.h kMaxReplayPs) and a typo in a unit ('1000B/s') is refused at its
// line rather than answered with a step of months:
// - hbm_bandwidth: the catalog spans 1555 GB/s (A100 40GB datasheet) to 8 TB/s (B200 datasheet).
const Bandwidth kMinHbm = Bandwidth::GBps(1), kMaxHbm = Bandwidth::GBps(1e6);
// - peak: the catalog spans 19.5 TFLOP/s (A100 fp32, datasheet) to a few PFLOP/s (Blackwell
//   fp8, datasheets).
const FlopRate kMinPeak = FlopRate::TFLOPs(1), kMaxPeak = FlopRate::TFLOPs(1e6);
// - memory: the catalog spans 40 GiB (A100 40GB, nvidia-smi) to 288 GiB (GB300, B300, MI355X;
//   datasheets); the bounds are 1 GiB and 1 PiB.
constexpr double kMinMemory = 1024.0 * 1024 * 1024, kMaxMemory = kMinMemory * 1024 * 1024;
// - fabric bandwidth: the catalog spans 12.5 GB/s (100 Gb Ethernet) to 900 GB/s (NVLink5); the
//   floor is 1 Gb/s Ethernet.
const Bandwidth kMinLink = Bandwidth::Gbps(1), kMaxLink = Bandwidth::GBps(1e6);
// - latencies and per-op overheads: the catalog's are 1-25 us; a second is a wide-area round
//   trip ten times over.
const Duration kMaxLatency = Duration::Seconds(1);

// The keys an extending mapping sets ("name" and "extends" left out).
std::vector<std::string> OverriddenKeys(const YAML::Node& node) {
  std::vector<std::string> keys;
  for (const auto& kv : node) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (k != "extends" && k != "name") keys.push_back(k);
  }
  return keys;
}

// Adds `keys` to the keys an earlier extension set (a sweep or --set extending an extended entry).
void AddKeys(const std::vector<std::string>& keys, std::vector<std::string>* to) {
  for (const std::string& k : keys) {
    if (std::find(to->begin(), to->end(), k) == to->end()) to->push_back(k);
  }
}

// Those keys for the name an extended GPU is given: "sustained_factor, sms".
std::string OverriddenList(const std::vector<std::string>& keys) {
  return keys.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(keys, ", "));
}

// The GPU's CUDA device names and its usual server (GpuSpec::device_names, server).
Status ReadDeviceFacts(const YamlContext& ctx, const MapReader& m, GpuSpec* g) {
  PARASIM_RETURN_IF_ERROR(m.Number("compute_capability", &g->compute_capability, 1.0, 99.0));
  if (m.Has("device_names")) {
    const YAML::Node list = m.Node("device_names");
    if (!list.IsSequence()) {
      return m.Error("device_names", "expected a list of names, e.g. [\"NVIDIA A100-SXM4-80GB\"]");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      PARASIM_ASSIGN_OR_RETURN(
          std::string name,
          ReadScalar(ctx, list[i], fmt::format("{}[{}]", m.Path("device_names"), i)));
      g->device_names.push_back(std::move(name));
    }
  }
  if (!m.Has("server")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(MapReader s, MapReader::Open(ctx, m.Node("server"), m.Path("server"),
                                                        {"gpus", "intra", "inter"}));
  for (auto k : {"gpus", "intra", "inter"}) PARASIM_RETURN_IF_ERROR(s.Require(k));
  PARASIM_RETURN_IF_ERROR(s.Int("gpus", &g->server.gpus, 1, 1 << 20));
  PARASIM_RETURN_IF_ERROR(s.String("intra", &g->server.intra));
  PARASIM_RETURN_IF_ERROR(s.String("inter", &g->server.inter));
  return Status::Ok();
}

}  // namespace

Status ReadAttentionEfficiency(const MapReader& m, const char* key, AttentionEfficiency* out) {
  if (!m.Has(key)) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(
      MapReader a, MapReader::Open(m.ctx(), m.Node(key), m.Path(key), {"forward", "backward"}));
  AttentionEfficiency e;
  PARASIM_RETURN_IF_ERROR(a.Require("forward"));
  PARASIM_RETURN_IF_ERROR(a.Require("backward"));
  PARASIM_RETURN_IF_ERROR(a.Number("forward", &e.forward, 0.01, 1.0));
  PARASIM_RETURN_IF_ERROR(a.Number("backward", &e.backward, 0.01, 1.0));
  *out = e;
  return Status::Ok();
}

Status ReadElementwiseRates(const MapReader& m, const char* key, ElementwiseRates* out) {
  if (!m.Has(key)) return Status::Ok();
  std::vector<std::string_view> keys;
  for (const ElementwiseRateKey& k : kElementwiseRateKeys) keys.push_back(k.key);
  PARASIM_ASSIGN_OR_RETURN(MapReader r, MapReader::Open(m.ctx(), m.Node(key), m.Path(key), keys));
  ElementwiseRates e = *out;
  // Elements a second: from a billion (far below any GPU's) to ten quadrillion.
  for (const ElementwiseRateKey& k : kElementwiseRateKeys) {
    PARASIM_RETURN_IF_ERROR(r.Number(k.key, &(e.*k.rate), 1e9, 1e16));
  }
  *out = e;
  return Status::Ok();
}

namespace {

// The keys a GPU mapping takes (an extending one `extends` too).
std::vector<std::string_view> GpuKeys() {
  return {"name",
          "memory",
          "hbm_bandwidth",
          "peak",
          "sms",
          "gemm_efficiency",
          "memory_efficiency",
          "launch_overhead",
          "sustained_factor",
          "device_names",
          "server",
          "attention_flash",
          "attention_flash2",
          "gemm_efficiency_fp8",
          "mxfp8",
          "host_op_time",
          "elementwise_rates",
          "compute_capability",
          "host_micro_batch_time",
          "host_step_time"};
}

}  // namespace

StatusOr<GpuSpec> ParseGpuSpec(const YamlContext& ctx, const YAML::Node& node, std::string path,
                               std::string id, const GpuSpec* base) {
  std::vector<std::string_view> keys = GpuKeys();
  if (base) keys.push_back("extends");
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, path, keys));
  GpuSpec g;
  if (base) {
    g = *base;
    const std::vector<std::string> set = OverriddenKeys(node);
    AddKeys(set, &g.scenario_keys);
    g.name = fmt::format("{} ({} changed)", base->name, OverriddenList(set));
    if (m.Has("device_names")) g.device_names.clear();
  } else {
    g.id = std::move(id);
    g.name = g.id;
    for (auto k : {"memory", "hbm_bandwidth", "peak", "sms"}) PARASIM_RETURN_IF_ERROR(m.Require(k));
  }
  PARASIM_RETURN_IF_ERROR(m.String("name", &g.name));
  PARASIM_RETURN_IF_ERROR(m.Size("memory", &g.memory));
  PARASIM_RETURN_IF_ERROR(m.Rate("hbm_bandwidth", &g.hbm_bandwidth, kMinHbm, kMaxHbm));
  PARASIM_RETURN_IF_ERROR(m.Int("sms", &g.sms, 1, 100000));
  PARASIM_RETURN_IF_ERROR(m.Number("gemm_efficiency", &g.gemm_efficiency, 0.01, 1.0));
  PARASIM_RETURN_IF_ERROR(m.Number("gemm_efficiency_fp8", &g.gemm_efficiency_fp8, 0.01, 1.0));
  PARASIM_RETURN_IF_ERROR(m.Bool("mxfp8", &g.mxfp8));
  PARASIM_RETURN_IF_ERROR(m.Number("memory_efficiency", &g.memory_efficiency, 0.01, 1.0));
  PARASIM_RETURN_IF_ERROR(
      m.Time("launch_overhead", &g.launch_overhead, Duration::Zero(), kMaxLatency));
  PARASIM_RETURN_IF_ERROR(m.Time("host_op_time", &g.host_op_time, Duration::Zero(), kMaxLatency));
  PARASIM_RETURN_IF_ERROR(
      m.Time("host_micro_batch_time", &g.host_micro_batch_time, Duration::Zero(), kMaxLatency));
  PARASIM_RETURN_IF_ERROR(
      m.Time("host_step_time", &g.host_step_time, Duration::Zero(), kMaxLatency));
  PARASIM_RETURN_IF_ERROR(m.Number("sustained_factor", &g.sustained_factor, 0.05, 1.0));
  PARASIM_RETURN_IF_ERROR(ReadAttentionEfficiency(m, "attention_flash", &g.attention_flash));
  PARASIM_RETURN_IF_ERROR(ReadAttentionEfficiency(m, "attention_flash2", &g.attention_flash2));
  PARASIM_RETURN_IF_ERROR(ReadElementwiseRates(m, "elementwise_rates", &g.elementwise_rates));
  PARASIM_RETURN_IF_ERROR(ReadDeviceFacts(ctx, m, &g));
  // (an extending mapping may leave the peaks out: the base's stand)
  if (!base || m.Has("peak")) {
    PARASIM_ASSIGN_OR_RETURN(MapReader p,
                             MapReader::Open(ctx, m.Node("peak"), m.Path("peak"), DtypeNames()));
    for (int i = 0; i < kNumDtypes; ++i) {
      PARASIM_RETURN_IF_ERROR(
          p.Compute(DtypeName(static_cast<Dtype>(i)), &g.peak[i], kMinPeak, kMaxPeak));
    }
    if (g.Peak(Dtype::kBf16).flops_per_second() <= 0 &&
        g.Peak(Dtype::kFp16).flops_per_second() <= 0) {
      return p.Error("bf16", "a 16-bit peak (bf16 or fp16) is required, e.g. '312TFLOP/s'");
    }
  }
  if (g.memory.bytes() < kMinMemory || g.memory.bytes() > kMaxMemory) {
    return m.Error("memory", fmt::format("expected a size from 1 GiB to 1 PiB (the catalog's GPUs "
                                         "hold 40 to 288 GiB), got {:.6g} B",
                                         g.memory.bytes()));
  }
  // A GPU without a bf16 entry uses fp16 and vice versa; tf32 falls back to fp32.
  auto fill = [&](Dtype a, Dtype b) {
    if (g.Peak(a).flops_per_second() <= 0) g.peak[static_cast<int>(a)] = g.Peak(b);
  };
  fill(Dtype::kBf16, Dtype::kFp16);
  fill(Dtype::kFp16, Dtype::kBf16);
  fill(Dtype::kTf32, Dtype::kFp32);
  return g;
}

StatusOr<FabricSpec> ParseFabricSpec(const YamlContext& ctx, const YAML::Node& node,
                                     std::string path, std::string id, const FabricSpec* base) {
  std::vector<std::string_view> keys = {"kind", "bandwidth", "latency", "efficiency"};
  if (base) keys.push_back("extends");
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, path, keys));
  FabricSpec f;
  if (base) {
    f = *base;
    AddKeys(OverriddenKeys(node), &f.scenario_keys);
  } else {
    f.id = std::move(id);
    f.latency = Duration::Microseconds(5);
    PARASIM_RETURN_IF_ERROR(m.Require("bandwidth"));
  }
  std::string kind = f.kind == FabricKind::kInter ? "inter" : "intra";
  PARASIM_RETURN_IF_ERROR(m.Enum("kind", &kind, {"intra", "inter"}));
  f.kind = kind == "intra" ? FabricKind::kIntra : FabricKind::kInter;
  PARASIM_RETURN_IF_ERROR(m.Rate("bandwidth", &f.bandwidth, kMinLink, kMaxLink));
  PARASIM_RETURN_IF_ERROR(m.Time("latency", &f.latency, Duration::Zero(), kMaxLatency));
  PARASIM_RETURN_IF_ERROR(m.Number("efficiency", &f.efficiency, 0.01, 1.0));
  if (f.bandwidth.bytes_per_second() <= 0) return m.Error("bandwidth", "must be more than 0");
  return f;
}

StatusOr<HardwareCatalog> LoadHardwareCatalog() {
  HardwareCatalog cat;
  {
    YamlContext ctx{"hardware/catalog/gpus.yaml", {}};
    PARASIM_ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(kGpusYaml, ctx.file));
    for (const auto& kv : root) {
      PARASIM_ASSIGN_OR_RETURN(GpuSpec g,
                               ParseGpuSpec(ctx, kv.second, kv.first.Scalar(), kv.first.Scalar()));
      cat.gpus.push_back(std::move(g));
    }
  }
  {
    YamlContext ctx{"hardware/catalog/fabrics.yaml", {}};
    PARASIM_ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(kFabricsYaml, ctx.file));
    for (const auto& kv : root) {
      PARASIM_ASSIGN_OR_RETURN(
          FabricSpec f, ParseFabricSpec(ctx, kv.second, kv.first.Scalar(), kv.first.Scalar()));
      cat.fabrics.push_back(std::move(f));
    }
  }
  return cat;
}

namespace {

// The commented values of a catalog's text: a line "id:" at the margin opens an entry, an
// indented "key: value  # source" gives one of its values' source.
std::vector<ValueSource> SourcesOf(std::string_view text) {
  std::vector<ValueSource> out;
  std::string entry;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const size_t colon = line.find(':');
    if (line.empty() || line[0] == '#' || colon == std::string_view::npos) continue;
    if (line[0] != ' ') {
      entry = std::string(line.substr(0, colon));
      continue;
    }
    const size_t hash = line.find(" # ");
    const size_t key_at = line.find_first_not_of(' ');
    if (hash == std::string_view::npos || entry.empty() || key_at >= colon || line[key_at] == '#') {
      continue;
    }
    std::string_view key = line.substr(key_at, colon - key_at);
    if (key.find_first_of("{[\"") != std::string_view::npos) continue;
    std::string_view source = line.substr(hash + 3);
    while (!source.empty() && source.front() == ' ') source.remove_prefix(1);
    out.push_back({entry, std::string(key), std::string(source)});
  }
  return out;
}

}  // namespace

std::vector<ValueSource> GpuSources() { return SourcesOf(kGpusYaml); }
std::vector<ValueSource> FabricSources() { return SourcesOf(kFabricsYaml); }

const GpuSpec* HardwareCatalog::FindGpu(std::string_view id) const {
  for (const auto& g : gpus) {
    if (g.id == id) return &g;
  }
  return nullptr;
}

const GpuSpec* HardwareCatalog::FindGpuByDevice(std::string_view device) const {
  const auto first = device.find_first_not_of(' ');
  if (first == std::string_view::npos) return nullptr;
  device = device.substr(first, device.find_last_not_of(' ') - first + 1);
  for (const auto& g : gpus) {
    for (const auto& name : g.device_names) {
      if (name == device) return &g;
    }
  }
  return nullptr;
}

const FabricSpec::CollectiveFit* FabricSpec::FindCollective(Collective op, Algo algo, int64_t ranks,
                                                            int64_t per_node) const {
  for (const auto& c : collectives) {
    if (c.op == op && c.algo == algo && c.ranks == ranks && c.per_node == per_node) return &c;
  }
  return nullptr;
}

const FabricSpec* HardwareCatalog::FindFabric(std::string_view id) const {
  for (const auto& f : fabrics) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

std::vector<std::string_view> HardwareCatalog::GpuIds() const {
  std::vector<std::string_view> out;
  for (const auto& g : gpus) out.push_back(g.id);
  return out;
}

std::vector<std::string_view> HardwareCatalog::FabricIds() const {
  std::vector<std::string_view> out;
  for (const auto& f : fabrics) out.push_back(f.id);
  return out;
}

}  // namespace parasim
