#include "scenarios/serving_block.h"

#include <fmt/core.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/parse_units.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

constexpr const char* kLengthHint =
    "a token count (1024), {uniform: [a, b]} or {lognormal: {mean: M, sigma: S}}, each with "
    "optional min and max";

// The percentiles a target may name.
constexpr std::string_view kSloPercentiles[] = {"50", "90", "95", "99", "99.9"};

Status ReadPrecision(const MapReader& m, ServingPrecision* p) {
  std::string s;
  if (m.Has("precision")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("precision", &s, ServeDtypeNames()));
    p->weights = p->activations = *ParseServeDtype(s);
  }
  if (m.Has("weights")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("weights", &s, ServeDtypeNames()));
    p->weights = *ParseServeDtype(s);
  }
  if (m.Has("activations")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("activations", &s, ServeDtypeNames()));
    p->activations = *ParseServeDtype(s);
  }
  if (m.Has("kv_dtype")) {
    PARASIM_RETURN_IF_ERROR(m.Enum("kv_dtype", &s, {"bf16", "fp16", "fp8"}));
    p->kv = *ParseServeDtype(s);
  }
  return Status::Ok();
}

// `key`: a count, {uniform: [a, b]} or {lognormal: {mean, sigma}}, with optional min and max.
Status ReadLength(const YamlContext& ctx, const MapReader& m, std::string_view key, LengthDist* d) {
  if (!m.Has(key)) return Status::Ok();
  const YAML::Node n = m.Node(key);
  if (n.IsScalar()) {
    int64_t v = 0;
    PARASIM_RETURN_IF_ERROR(m.Int(key, &v, 1, int64_t{1} << 24));
    *d = LengthDist::Fixed(v);
    return Status::Ok();
  }
  if (!n.IsMap()) return m.Error(key, std::string("expected ") + kLengthHint);
  PARASIM_ASSIGN_OR_RETURN(
      MapReader r, MapReader::Open(ctx, n, m.Path(key), {"uniform", "lognormal", "min", "max"}));
  if (r.Has("uniform") == r.Has("lognormal")) {
    return m.Error(key, std::string("give one of uniform or lognormal: ") + kLengthHint);
  }
  if (r.Has("uniform")) {
    const YAML::Node u = r.Node("uniform");
    if (!u.IsSequence() || u.size() != 2) {
      return r.Error("uniform", "expected [a, b], the least and the most tokens");
    }
    PARASIM_ASSIGN_OR_RETURN(int64_t a, ReadInt(ctx, u[0], r.Path("uniform") + "[0]", 1, 1 << 24));
    PARASIM_ASSIGN_OR_RETURN(int64_t b, ReadInt(ctx, u[1], r.Path("uniform") + "[1]", a, 1 << 24));
    *d = {LengthDist::Kind::kUniform, static_cast<double>(a), static_cast<double>(b), 1, 0};
  } else {
    PARASIM_ASSIGN_OR_RETURN(MapReader l, MapReader::Open(ctx, r.Node("lognormal"),
                                                          r.Path("lognormal"), {"mean", "sigma"}));
    PARASIM_RETURN_IF_ERROR(l.Require("mean"));
    PARASIM_RETURN_IF_ERROR(l.Require("sigma"));
    *d = {LengthDist::Kind::kLognormal, 0, 0, 1, 0};
    PARASIM_RETURN_IF_ERROR(l.Number("mean", &d->a, 1, 1 << 24));
    PARASIM_RETURN_IF_ERROR(l.Number("sigma", &d->b, 0, 4));
  }
  PARASIM_RETURN_IF_ERROR(r.Int("min", &d->min, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("max", &d->max, d->min, int64_t{1} << 24));
  if (d->kind == LengthDist::Kind::kLognormal && r.Has("min") &&
      d->a <= static_cast<double>(d->min)) {
    return r.Error("min", fmt::format("the lognormal's mean ({}) must lie above min ({}): the "
                                      "mean is the clipped distribution's",
                                      d->a, d->min));
  }
  if (d->kind == LengthDist::Kind::kLognormal && d->max > 0 && d->a >= d->max) {
    return r.Error("max", fmt::format("the lognormal's mean ({}) must lie below max ({}): the "
                                      "mean is the clipped distribution's",
                                      d->a, d->max));
  }
  return Status::Ok();
}

Status ReadArrival(const YamlContext& ctx, const MapReader& m, Arrival* a) {
  if (!m.Has("arrival")) return Status::Ok();
  const YAML::Node n = m.Node("arrival");
  const char* hint = "offline (all at once), {rate: 20/s, burst: N} or {concurrency: N}";
  if (n.IsScalar()) {
    if (n.Scalar() != "offline") return m.Error("arrival", fmt::format("expected {}", hint));
    a->kind = Arrival::Kind::kOffline;
    return Status::Ok();
  }
  PARASIM_ASSIGN_OR_RETURN(
      MapReader r, MapReader::Open(ctx, n, m.Path("arrival"), {"rate", "burst", "concurrency"}));
  if (r.Has("rate") == r.Has("concurrency")) {
    return m.Error("arrival", fmt::format("give one of rate or concurrency: {}", hint));
  }
  if (r.Has("concurrency")) {
    a->kind = Arrival::Kind::kConcurrency;
    return r.Int("concurrency", &a->concurrency, 1, int64_t{1} << 24);
  }
  a->kind = Arrival::Kind::kPoisson;
  PARASIM_ASSIGN_OR_RETURN(std::string text, ReadScalar(ctx, r.Node("rate"), r.Path("rate")));
  StatusOr<double> rate = ParseRequestRate(text);
  if (!rate.ok()) return r.Error("rate", rate.status().message());
  a->rate_per_s = *rate;
  return r.Int("burst", &a->burst, 1, int64_t{1} << 20);
}

// A trace file: one request a line, "arrival_s, input_tokens, output_tokens" (commas or spaces);
// '#' starts a comment, and a first line (after comments and blank lines) that starts with a
// letter is a header. Tokens lie within the lengths' own limit, 2^24.
constexpr int64_t kMaxTraceTokens = int64_t{1} << 24;
Status ReadTrace(const MapReader& m, const std::string& dir, RequestSpec* rq) {
  std::string file;
  PARASIM_RETURN_IF_ERROR(m.String("trace", &file));
  const std::filesystem::path p = std::filesystem::path(file).is_absolute()
                                      ? std::filesystem::path(file)
                                      : std::filesystem::path(dir) / file;
  // A regular file of at most kMaxTraceBytes: a device or a pipe (/dev/zero) would be read
  // without end, and requests.count's limit (4,194,304 rows) fits well within it.
  constexpr uintmax_t kMaxTraceBytes = uintmax_t{512} << 20;
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) {
    return m.Error("trace", fmt::format("cannot read the trace file {}", p.string()));
  }
  if (!std::filesystem::is_regular_file(p, ec)) {
    return m.Error("trace", fmt::format("{} is not a regular file; expected a text file of "
                                        "'arrival_s, input_tokens, output_tokens' lines",
                                        p.string()));
  }
  if (const uintmax_t size = std::filesystem::file_size(p, ec); !ec && size > kMaxTraceBytes) {
    return m.Error("trace", fmt::format("{} holds {} bytes, over the {} MiB a trace may hold",
                                        p.string(), size, kMaxTraceBytes >> 20));
  }
  std::ifstream in(p);
  if (!in) return m.Error("trace", fmt::format("cannot read the trace file {}", p.string()));
  std::string line;
  bool first = true;  // no row or header read yet
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    for (char& c : line) c = c == ',' ? ' ' : c;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const bool header =
        first && std::isalpha(static_cast<unsigned char>(line[line.find_first_not_of(" \t")]));
    first = false;
    if (header) continue;
    std::istringstream row(line);
    TraceRow t;
    std::string extra;
    if (!(row >> t.arrival_s >> t.input >> t.output) || (row >> extra) || t.arrival_s < 0 ||
        t.input < 1 || t.output < 1 || t.input > kMaxTraceTokens || t.output > kMaxTraceTokens ||
        !(t.arrival_s <= kMaxArrivalSpanS)) {
      return m.Error("trace",
                     fmt::format("{}:{}: expected arrival_s, input_tokens, "
                                 "output_tokens (seconds from 0 to {:.0f}, 30 days; "
                                 "tokens from 1 to {}), got '{}'",
                                 p.string(), number, kMaxArrivalSpanS, kMaxTraceTokens, line));
    }
    // As many requests as `count` may hold (2^22): 40M rows had run out of memory.
    if (rq->trace.size() >= static_cast<size_t>(kMaxServedRequests)) {
      return m.Error("trace", fmt::format("{}:{}: more than {} requests (the most `count` takes)",
                                          p.string(), number, kMaxServedRequests));
    }
    rq->trace.push_back(t);
  }
  if (rq->trace.empty()) return m.Error("trace", fmt::format("{} holds no request", p.string()));
  rq->arrival.kind = Arrival::Kind::kTrace;
  rq->count = static_cast<int64_t>(rq->trace.size());
  return Status::Ok();
}

Status ReadRequests(const YamlContext& ctx, const MapReader& m, const std::string& dir,
                    RequestSpec* rq) {
  if (!m.Has("requests")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(MapReader r, MapReader::Open(ctx, m.Node("requests"), "serving.requests",
                                                        ServingRequestKeys()));
  PARASIM_RETURN_IF_ERROR(ReadLength(ctx, r, "input_tokens", &rq->input));
  PARASIM_RETURN_IF_ERROR(ReadLength(ctx, r, "output_tokens", &rq->output));
  PARASIM_RETURN_IF_ERROR(ReadArrival(ctx, r, &rq->arrival));
  PARASIM_RETURN_IF_ERROR(r.Int("count", &rq->count, 1, kMaxServedRequests));
  PARASIM_RETURN_IF_ERROR(r.Number("prefix_cache_hit", &rq->prefix_hit, 0, 0.99));
  int64_t seed = static_cast<int64_t>(rq->seed);
  PARASIM_RETURN_IF_ERROR(r.Int("seed", &seed, 0, int64_t{1} << 62));
  rq->seed = static_cast<uint64_t>(seed);
  if (r.Has("trace")) {
    if (r.Has("arrival") || r.Has("count")) {
      return r.Error("trace",
                     "a trace gives every request's arrival and lengths: leave arrival "
                     "and count out");
    }
    PARASIM_RETURN_IF_ERROR(ReadTrace(r, dir, rq));
  }
  if (rq->arrival.kind == Arrival::Kind::kPoisson && rq->arrival.rate_per_s > 0 &&
      static_cast<double>(rq->count) / rq->arrival.rate_per_s > kMaxArrivalSpanS) {
    return r.Error(
        "arrival",
        fmt::format("{} requests at {:g} a second arrive over {:.3g} s; the replay "
                    "takes at most {:.0f} s (30 days) of arrivals: a higher rate or "
                    "fewer requests",
                    rq->count, rq->arrival.rate_per_s,
                    static_cast<double>(rq->count) / rq->arrival.rate_per_s, kMaxArrivalSpanS));
  }
  return Status::Ok();
}

Status ReadSlo(const YamlContext& ctx, const MapReader& m, Slo* slo) {
  if (!m.Has("slo")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(MapReader r,
                           MapReader::Open(ctx, m.Node("slo"), "serving.slo", ServingSloKeys()));
  for (std::string_view key : ServingSloKeys()) {
    if (!r.Has(key)) continue;
    Duration d;
    PARASIM_RETURN_IF_ERROR(r.Time(key, &d));
    if (d <= Duration::Zero()) return r.Error(key, "a latency target must be positive");
    SloTarget t;
    const std::string_view metric = key.substr(0, key.find('_'));
    t.metric = metric == "ttft"   ? SloMetric::kTtft
               : metric == "tpot" ? SloMetric::kTpot
                                  : SloMetric::kE2e;
    t.percentile = std::stod(std::string(key.substr(key.rfind("_p") + 2)));
    t.seconds = d.seconds();
    slo->targets.push_back(t);
  }
  return Status::Ok();
}

Status ReadEngine(const YamlContext& ctx, const MapReader& m, EnginePolicy* e) {
  if (!m.Has("engine")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(
      MapReader r, MapReader::Open(ctx, m.Node("engine"), "serving.engine", ServingEngineKeys()));
  PARASIM_RETURN_IF_ERROR(r.Int("max_num_tokens", &e->max_num_tokens, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("max_seqs", &e->max_seqs, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Bool("chunked_prefill", &e->chunked_prefill));
  PARASIM_RETURN_IF_ERROR(
      r.Int("long_prefill_threshold", &e->long_prefill_threshold, 0, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("block_size", &e->block_size, 1, 1 << 16));
  PARASIM_RETURN_IF_ERROR(r.Number("kv_fraction", &e->kv_fraction, 0.01, 1));
  std::string s;
  if (r.Has("preemption")) {
    PARASIM_RETURN_IF_ERROR(r.Enum("preemption", &s, {"recompute", "none"}));
    e->preempt = s == "recompute";
  }
  // true, false, piecewise (vLLM V1's capture: every iteration up to its largest size) or mixed
  // (Megatron-Core's: whole iterations, prompt chunks included, up to its largest size).
  std::string graphs;
  PARASIM_RETURN_IF_ERROR(r.String("cuda_graphs", &graphs));
  if (graphs == "piecewise" || graphs == "mixed") {
    e->cuda_graphs = true;
    e->piecewise_graphs = graphs == "piecewise";
    e->mixed_graphs = graphs == "mixed";
  } else if (r.Has("cuda_graphs")) {
    StatusOr<bool> b = ParseBool(graphs);
    if (!b.ok()) return r.Error("cuda_graphs", "expected true, false, piecewise or mixed");
    e->cuda_graphs = *b;
    e->piecewise_graphs = e->mixed_graphs = false;
  }
  PARASIM_RETURN_IF_ERROR(
      r.Int("cuda_graph_max_tokens", &e->graph_max_tokens, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("moe_chunk_tokens", &e->moe_chunk_tokens, 0, int64_t{1} << 24));
  if (r.Has("iteration_overhead")) {
    Duration d;
    PARASIM_RETURN_IF_ERROR(r.Time("iteration_overhead", &d));
    e->iteration_overhead = d;
  }
  // Up to 10,000 framework ops a call or a launch (a third of a second on a DGX H100's host).
  PARASIM_RETURN_IF_ERROR(r.Number("host_ops_per_op", &e->host_ops_per_op, 0, 1e4));
  PARASIM_RETURN_IF_ERROR(r.Number("host_ops_per_graph", &e->host_ops_per_graph, 0, 1e4));
  if (r.Has("cuda_graph_scope")) {
    PARASIM_RETURN_IF_ERROR(r.Enum("cuda_graph_scope", &s, {"whole", "layer"}));
    e->layer_graphs = s == "layer";
    if (e->layer_graphs && (!e->cuda_graphs || e->piecewise_graphs)) {
      return r.Error("cuda_graph_scope",
                     "layer applies to cuda_graphs: true or mixed (set one, or leave "
                     "cuda_graph_scope out)");
    }
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string_view>& ServingKeys() {
  static const std::vector<std::string_view> kKeys = {
      "precision", "weights", "activations", "kv_dtype", "requests", "slo", "engine"};
  return kKeys;
}

const std::vector<std::string_view>& ServingRequestKeys() {
  static const std::vector<std::string_view> kKeys = {
      "input_tokens", "output_tokens", "arrival", "count", "prefix_cache_hit", "seed", "trace"};
  return kKeys;
}

const std::vector<std::string_view>& ServingEngineKeys() {
  static const std::vector<std::string_view> kKeys = {"max_num_tokens",
                                                      "max_seqs",
                                                      "chunked_prefill",
                                                      "long_prefill_threshold",
                                                      "block_size",
                                                      "kv_fraction",
                                                      "preemption",
                                                      "cuda_graphs",
                                                      "cuda_graph_max_tokens",
                                                      "moe_chunk_tokens",
                                                      "iteration_overhead",
                                                      "host_ops_per_op",
                                                      "host_ops_per_graph",
                                                      "cuda_graph_scope"};
  return kKeys;
}

const std::vector<std::string_view>& ServingSloKeys() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> out;
    for (const char* metric : {"ttft", "tpot", "e2e"}) {
      for (std::string_view p : kSloPercentiles) out.push_back(fmt::format("{}_p{}", metric, p));
    }
    return out;
  }();
  static const std::vector<std::string_view> kKeys(kNames.begin(), kNames.end());
  return kKeys;
}

StatusOr<double> ParseRequestRate(std::string_view text) {
  const std::string s(text);
  const size_t slash = s.find('/');
  const char* hint = "expected requests per unit of time, e.g. 20/s, 1200/min or 0.5/s";
  if (slash == std::string::npos) return InvalidArgument(fmt::format("{}, got '{}'", hint, s));
  StatusOr<double> n = ParseCount(s.substr(0, slash));
  const std::string unit = s.substr(slash + 1);
  const double per = unit == "s" ? 1 : unit == "min" ? 60 : unit == "h" ? 3600 : 0;
  if (!n.ok() || per == 0 || *n <= 0) return InvalidArgument(fmt::format("{}, got '{}'", hint, s));
  return *n / per;
}

Status ParseServing(const YamlContext& ctx, const YAML::Node& node, const std::string& dir,
                    ServingSpec* sv) {
  PARASIM_ASSIGN_OR_RETURN(MapReader m, MapReader::Open(ctx, node, "serving", ServingKeys()));
  PARASIM_RETURN_IF_ERROR(ReadPrecision(m, &sv->precision));
  PARASIM_RETURN_IF_ERROR(ReadRequests(ctx, m, dir, &sv->requests));
  PARASIM_RETURN_IF_ERROR(ReadSlo(ctx, m, &sv->slo));
  return ReadEngine(ctx, m, &sv->engine);
}

}  // namespace parasim
