#include "hardware/measurements.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "sim/io.h"
#include "sim/json.h"
#include "sim/parse_units.h"
#include "sim/yaml_reader.h"

namespace parasim {

Flops AttentionPoint::ForwardFlops() const {
  const double s = static_cast<double>(seq);
  return Flops(4.0 * static_cast<double>(batch) * s * s * static_cast<double>(head_dim) *
               (causal ? 0.5 : 1.0));
}

Bytes AttentionPoint::HbmBytes(bool bwd) const {
  const double b = static_cast<double>(batch), s = static_cast<double>(seq);
  if (kind == "flash")
    return Bytes(b * s * static_cast<double>(head_dim) * 4 * 2.0 * (bwd ? 2.5 : 1.0));
  return Bytes(b * s * s * 2.0 * (bwd ? 5 : 4));
}

namespace {

// Reads a measurements file one list at a time; each row reader checks one point.
class MeasurementReader {
 public:
  explicit MeasurementReader(const std::string& file) : ctx_{file, {}} { m.file = file; }
  Status Read(const std::string& text);
  Measurements m;

 private:
  template <typename Row>
  Status List(const MapReader& top, const char* key, Row row);
  Status Spread(const MapReader& r, const std::string& path, double* out) const;
  static Status Positive(const MapReader& r, const char* key, Duration d) {
    if (d <= Duration::Zero()) return r.Error(key, "a measured time must be positive");
    return Status::Ok();
  }
  Status GemmRow(const YAML::Node& n, const std::string& path);
  Status MemoryRow(const YAML::Node& n, const std::string& path);
  Status AttentionRow(const YAML::Node& n, const std::string& path);
  Status HostCopyRow(const YAML::Node& n, const std::string& path);
  Status CollectiveRow(const YAML::Node& n, const std::string& path);
  Status ContentionRow(const YAML::Node& n, const std::string& path);
  Status SustainedRow(const YAML::Node& n, const std::string& path);
  // "file:line" of a row, for the fit's report of the points that disagree.
  std::string Where(const YAML::Node& n) const {
    return fmt::format("{}:{}", m.file, n.Mark().line + 1);
  }

  YamlContext ctx_;
};

template <typename Row>
Status MeasurementReader::List(const MapReader& top, const char* key, Row row) {
  if (!top.Has(key)) return Status::Ok();
  const YAML::Node n = top.Node(key);
  if (!n.IsSequence()) return ctx_.ErrorAt(n, key, "expected a list of measurements");
  for (size_t i = 0; i < n.size(); ++i) {
    PARASIM_RETURN_IF_ERROR((this->*row)(n[i], fmt::format("{}[{}]", key, i)));
  }
  return Status::Ok();
}

Status MeasurementReader::Spread(const MapReader& r, const std::string& path, double* out) const {
  if (!r.Has("spread")) return Status::Ok();
  PARASIM_ASSIGN_OR_RETURN(std::string sp, ReadScalar(ctx_, r.Node("spread"), path + ".spread"));
  if (!sp.empty() && sp.back() == '%') sp.pop_back();
  size_t used = 0;
  double x = -1;
  try {
    x = std::stod(sp, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != sp.size() || !(x >= 0) || !std::isfinite(x)) {
    return r.Error("spread", "expected a non-negative percentage such as 0.4%");
  }
  *out = x / 100;
  return Status::Ok();
}

Status MeasurementReader::GemmRow(const YAML::Node& n, const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader r, MapReader::Open(ctx_, n, path, {"dtype", "m", "n", "k", "time", "spread"}));
  GemmPoint p;
  for (auto k : {"m", "n", "k", "time"}) PARASIM_RETURN_IF_ERROR(r.Require(k));
  std::string dt = "bf16";
  PARASIM_RETURN_IF_ERROR(r.Enum("dtype", &dt, DtypeNames()));
  p.dtype = *ParseDtype(dt);
  PARASIM_RETURN_IF_ERROR(r.Int("m", &p.m, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("n", &p.n, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("k", &p.k, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Time("time", &p.time));
  PARASIM_RETURN_IF_ERROR(Positive(r, "time", p.time));
  PARASIM_RETURN_IF_ERROR(Spread(r, path, &p.spread));
  p.where = Where(n);
  m.gemm.push_back(p);
  return Status::Ok();
}

Status MeasurementReader::MemoryRow(const YAML::Node& n, const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(MapReader r,
                           MapReader::Open(ctx_, n, path, {"kernel", "bytes", "time", "spread"}));
  MemoryPoint p;
  for (auto k : {"kernel", "bytes", "time"}) PARASIM_RETURN_IF_ERROR(r.Require(k));
  PARASIM_RETURN_IF_ERROR(
      r.Enum("kernel", &p.kernel,
             {"copy", "triad", "elementwise", "softmax", "layernorm", "fp8-cast-tensorwise",
              "fp8-amax", "fp8-cast-1x128", "fp8-cast-128x128"}));
  PARASIM_RETURN_IF_ERROR(r.Size("bytes", &p.bytes));
  if (p.bytes.bytes() <= 0) return r.Error("bytes", "a kernel must move at least one byte");
  PARASIM_RETURN_IF_ERROR(r.Time("time", &p.time));
  PARASIM_RETURN_IF_ERROR(Positive(r, "time", p.time));
  PARASIM_RETURN_IF_ERROR(Spread(r, path, &p.spread));
  p.where = Where(n);
  m.memory.push_back(p);
  return Status::Ok();
}

Status MeasurementReader::AttentionRow(const YAML::Node& n, const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(MapReader r,
                           MapReader::Open(ctx_, n, path,
                                           {"kind", "batch", "seq", "head_dim", "causal", "forward",
                                            "backward", "spread"}));
  AttentionPoint p;
  for (auto k : {"kind", "batch", "seq", "head_dim", "forward"}) {
    PARASIM_RETURN_IF_ERROR(r.Require(k));
  }
  PARASIM_RETURN_IF_ERROR(r.Enum("kind", &p.kind, {"standard", "flash"}));
  PARASIM_RETURN_IF_ERROR(r.Int("batch", &p.batch, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("seq", &p.seq, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("head_dim", &p.head_dim, 1, 4096));
  PARASIM_RETURN_IF_ERROR(r.Bool("causal", &p.causal));
  PARASIM_RETURN_IF_ERROR(r.Time("forward", &p.forward));
  PARASIM_RETURN_IF_ERROR(Positive(r, "forward", p.forward));
  if (r.Has("backward")) {
    PARASIM_RETURN_IF_ERROR(r.Time("backward", &p.backward));
    PARASIM_RETURN_IF_ERROR(Positive(r, "backward", p.backward));
  }
  PARASIM_RETURN_IF_ERROR(Spread(r, path, &p.spread));
  p.where = Where(n);
  m.attention.push_back(p);
  return Status::Ok();
}

Status MeasurementReader::HostCopyRow(const YAML::Node& n, const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader r, MapReader::Open(ctx_, n, path, {"direction", "bytes", "time", "spread"}));
  HostCopyPoint p;
  for (auto k : {"direction", "bytes", "time"}) PARASIM_RETURN_IF_ERROR(r.Require(k));
  PARASIM_RETURN_IF_ERROR(r.Enum("direction", &p.direction, {"h2d", "d2h"}));
  PARASIM_RETURN_IF_ERROR(r.Size("bytes", &p.bytes));
  if (p.bytes.bytes() <= 0) return r.Error("bytes", "a copy must move at least one byte");
  PARASIM_RETURN_IF_ERROR(r.Time("time", &p.time));
  PARASIM_RETURN_IF_ERROR(Positive(r, "time", p.time));
  PARASIM_RETURN_IF_ERROR(Spread(r, path, &p.spread));
  m.host_copies.push_back(p);
  return Status::Ok();
}

Status MeasurementReader::CollectiveRow(const YAML::Node& n, const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(MapReader r, MapReader::Open(ctx_, n, path,
                                                        {"op", "fabric", "ranks", "per_node",
                                                         "bytes", "time", "spread"}));
  CollectivePoint p;
  for (auto k : {"op", "ranks", "bytes", "time"}) PARASIM_RETURN_IF_ERROR(r.Require(k));
  std::string op;
  PARASIM_RETURN_IF_ERROR(r.Enum("op", &op, CollectiveNames()));
  p.op = *ParseCollective(op);
  PARASIM_RETURN_IF_ERROR(r.String("fabric", &p.fabric));
  PARASIM_RETURN_IF_ERROR(r.Int("ranks", &p.ranks, 1, int64_t{1} << 24));
  p.per_node = p.ranks;
  PARASIM_RETURN_IF_ERROR(r.Int("per_node", &p.per_node, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Size("bytes", &p.bytes));
  PARASIM_RETURN_IF_ERROR(r.Time("time", &p.time));
  PARASIM_RETURN_IF_ERROR(Positive(r, "time", p.time));
  PARASIM_RETURN_IF_ERROR(Spread(r, path, &p.spread));
  p.where = Where(n);
  m.collectives.push_back(p);
  return Status::Ok();
}

Status MeasurementReader::ContentionRow(const YAML::Node& n, const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader r, MapReader::Open(ctx_, n, path,
                                   {"victim", "m", "n", "k", "bytes", "background", "blocks", "sms",
                                    "alone", "with", "rate", "spread"}));
  ContentionPoint p;
  for (auto k : {"victim", "background", "blocks", "sms", "alone", "with"}) {
    PARASIM_RETURN_IF_ERROR(r.Require(k));
  }
  PARASIM_RETURN_IF_ERROR(r.Enum("victim", &p.victim, {"gemm", "copy"}));
  if (p.victim == "gemm") {
    for (auto k : {"m", "n", "k"}) PARASIM_RETURN_IF_ERROR(r.Require(k));
    PARASIM_RETURN_IF_ERROR(r.Int("m", &p.m, 1, int64_t{1} << 24));
    PARASIM_RETURN_IF_ERROR(r.Int("n", &p.n, 1, int64_t{1} << 24));
    PARASIM_RETURN_IF_ERROR(r.Int("k", &p.k, 1, int64_t{1} << 24));
  } else {
    PARASIM_RETURN_IF_ERROR(r.Require("bytes"));
    PARASIM_RETURN_IF_ERROR(r.Size("bytes", &p.bytes));
    if (p.bytes.bytes() <= 0) return r.Error("bytes", "a copy must move at least one byte");
  }
  PARASIM_RETURN_IF_ERROR(r.Enum("background", &p.background, {"spin", "copy"}));
  PARASIM_RETURN_IF_ERROR(r.Int("sms", &p.sms, 1, 4096));
  PARASIM_RETURN_IF_ERROR(r.Int("blocks", &p.blocks, 1, 4096));
  if (p.blocks >= p.sms) return r.Error("blocks", "fewer blocks than the GPU has SMs");
  PARASIM_RETURN_IF_ERROR(r.Time("alone", &p.alone));
  PARASIM_RETURN_IF_ERROR(Positive(r, "alone", p.alone));
  PARASIM_RETURN_IF_ERROR(r.Time("with", &p.with));
  PARASIM_RETURN_IF_ERROR(Positive(r, "with", p.with));
  PARASIM_RETURN_IF_ERROR(r.Rate("rate", &p.rate));
  PARASIM_RETURN_IF_ERROR(Spread(r, path, &p.spread));
  m.contention.push_back(p);
  return Status::Ok();
}

Status MeasurementReader::SustainedRow(const YAML::Node& n, const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(
      MapReader r, MapReader::Open(ctx_, n, path, {"m", "n", "k", "seconds", "first", "last"}));
  SustainedPoint p;
  for (auto k : {"m", "n", "k", "seconds", "first", "last"}) PARASIM_RETURN_IF_ERROR(r.Require(k));
  PARASIM_RETURN_IF_ERROR(r.Int("m", &p.m, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("n", &p.n, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Int("k", &p.k, 1, int64_t{1} << 24));
  PARASIM_RETURN_IF_ERROR(r.Number("seconds", &p.seconds, 1, 86400));
  PARASIM_RETURN_IF_ERROR(r.Time("first", &p.first));
  PARASIM_RETURN_IF_ERROR(Positive(r, "first", p.first));
  PARASIM_RETURN_IF_ERROR(r.Time("last", &p.last));
  PARASIM_RETURN_IF_ERROR(Positive(r, "last", p.last));
  m.sustained.push_back(p);
  return Status::Ok();
}

Status MeasurementReader::Read(const std::string& text) {
  PARASIM_ASSIGN_OR_RETURN(
      YAML::Node root,
      ParseYaml(text, m.file, "keys such as gpu, launch, gemm, memory, attention, collectives"));
  PARASIM_ASSIGN_OR_RETURN(
      MapReader top,
      MapReader::Open(ctx_, root, "",
                      {"gpu", "device", "driver", "date", "launch", "gemm", "memory", "attention",
                       "host_copies", "collectives", "contention", "sustained"}));
  PARASIM_RETURN_IF_ERROR(top.String("gpu", &m.gpu));
  PARASIM_RETURN_IF_ERROR(top.String("device", &m.device));
  PARASIM_RETURN_IF_ERROR(top.String("driver", &m.driver));
  PARASIM_RETURN_IF_ERROR(top.String("date", &m.date));
  PARASIM_RETURN_IF_ERROR(top.Time("launch", &m.launch));
  PARASIM_RETURN_IF_ERROR(List(top, "gemm", &MeasurementReader::GemmRow));
  PARASIM_RETURN_IF_ERROR(List(top, "memory", &MeasurementReader::MemoryRow));
  PARASIM_RETURN_IF_ERROR(List(top, "attention", &MeasurementReader::AttentionRow));
  PARASIM_RETURN_IF_ERROR(List(top, "host_copies", &MeasurementReader::HostCopyRow));
  PARASIM_RETURN_IF_ERROR(List(top, "collectives", &MeasurementReader::CollectiveRow));
  PARASIM_RETURN_IF_ERROR(List(top, "contention", &MeasurementReader::ContentionRow));
  PARASIM_RETURN_IF_ERROR(List(top, "sustained", &MeasurementReader::SustainedRow));
  if (m.launch <= Duration::Zero() && m.gemm.empty() && m.memory.empty() && m.attention.empty() &&
      m.host_copies.empty() && m.collectives.empty() && m.contention.empty() &&
      m.sustained.empty()) {
    return InvalidArgument(
        fmt::format("{}:1:1: error: no measurements; expected launch or a list under gemm, memory, "
                    "attention, host_copies, collectives, contention or sustained",
                    m.file));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Measurements> ParseMeasurements(const std::string& text, const std::string& file) {
  MeasurementReader reader(file);
  PARASIM_RETURN_IF_ERROR(reader.Read(text));
  return std::move(reader.m);
}

std::string FormatMeasurements(const Measurements& m) {
  std::string out = "# parasim measurements (hardware/measurements.h)\n";
  // Strings in double quotes with JSON escapes (a JSON string is a YAML double-quoted scalar).
  if (!m.gpu.empty()) out += fmt::format("gpu: {}\n", JsonEscape(m.gpu));
  if (!m.device.empty()) out += fmt::format("device: {}\n", JsonEscape(m.device));
  if (!m.driver.empty()) out += fmt::format("driver: {}\n", JsonEscape(m.driver));
  if (!m.date.empty()) out += fmt::format("date: {}\n", JsonEscape(m.date));
  if (m.launch > Duration::Zero())
    out += fmt::format("launch: {:.6g}us\n", m.launch.microseconds());
  if (!m.gemm.empty()) out += "gemm:\n";
  for (const auto& g : m.gemm) {
    out += fmt::format("  - {{dtype: {}, m: {}, n: {}, k: {}, time: {:.9g}us, spread: {:.3g}%}}\n",
                       DtypeName(g.dtype), g.m, g.n, g.k, g.time.microseconds(), 100 * g.spread);
  }
  if (!m.memory.empty()) out += "memory:\n";
  for (const auto& p : m.memory) {
    out += fmt::format("  - {{kernel: {}, bytes: {:.0f}B, time: {:.9g}us, spread: {:.3g}%}}\n",
                       p.kernel, p.bytes.bytes(), p.time.microseconds(), 100 * p.spread);
  }
  if (!m.attention.empty()) out += "attention:\n";
  for (const auto& a : m.attention) {
    out += fmt::format(
        "  - {{kind: {}, batch: {}, seq: {}, head_dim: {}, causal: {}, forward: {:.9g}us, ", a.kind,
        a.batch, a.seq, a.head_dim, a.causal, a.forward.microseconds());
    if (a.backward > Duration::Zero()) {
      out += fmt::format("backward: {:.9g}us, ", a.backward.microseconds());
    }
    out += fmt::format("spread: {:.3g}%}}\n", 100 * a.spread);
  }
  if (!m.host_copies.empty()) out += "host_copies:\n";
  for (const auto& h : m.host_copies) {
    out += fmt::format("  - {{direction: {}, bytes: {:.0f}B, time: {:.9g}us, spread: {:.3g}%}}\n",
                       h.direction, h.bytes.bytes(), h.time.microseconds(), 100 * h.spread);
  }
  if (!m.collectives.empty()) out += "collectives:\n";
  for (const auto& c : m.collectives) {
    out += fmt::format(
        "  - {{op: {}, {}ranks: {}, per_node: {}, bytes: {:.0f}B, time: {:.9g}us, spread: "
        "{:.3g}%}}\n",
        CollectiveName(c.op),
        c.fabric.empty() ? std::string() : fmt::format("fabric: {}, ", JsonEscape(c.fabric)),
        c.ranks, c.per_node, c.bytes.bytes(), c.time.microseconds(), 100 * c.spread);
  }
  if (!m.contention.empty()) out += "contention:\n";
  for (const auto& c : m.contention) {
    const std::string what = c.victim == "gemm" ? fmt::format("m: {}, n: {}, k: {}", c.m, c.n, c.k)
                                                : fmt::format("bytes: {:.0f}B", c.bytes.bytes());
    out += fmt::format(
        "  - {{victim: {}, {}, background: {}, blocks: {}, sms: {}, alone: {:.9g}us, with: "
        "{:.9g}us, {}spread: {:.3g}%}}\n",
        c.victim, what, c.background, c.blocks, c.sms, c.alone.microseconds(),
        c.with.microseconds(),
        c.rate.bytes_per_second() > 0 ? fmt::format("rate: {:.6g}GB/s, ", c.rate.gbps()) : "",
        100 * c.spread);
  }
  if (!m.sustained.empty()) out += "sustained:\n";
  for (const auto& p : m.sustained) {
    out += fmt::format(
        "  - {{m: {}, n: {}, k: {}, seconds: {:.6g}, first: {:.9g}us, last: {:.9g}us}}\n", p.m, p.n,
        p.k, p.seconds, p.first.microseconds(), p.last.microseconds());
  }
  return out;
}

bool CollectivePoint::CrossesNodes() const {
  // A send/recv run of more than two ranks is nccl-tests' ring (each rank sends to the next):
  // once its ranks span nodes, the pairs that cross a node boundary bound its time.
  return per_node < ranks;
}

namespace {

// The points of one run: its rows whose data check did not fail, with its ranks and ranks per
// node (hardware/readers/nccl_tests_checks.h); an error when the run cannot be trusted.
Status RunPoints(const NcclTestsLog& log, const NcclTestsSection& s, Collective op,
                 const NcclRanksGiven& given, Measurements* m) {
  PARASIM_ASSIGN_OR_RETURN(NcclRunShape shape, NcclRunRanks(s, log.file, given));
  PARASIM_ASSIGN_OR_RETURN(NcclPassedRows passed, NcclRowsThatPassed(s, log.file));
  if (!shape.note.empty()) m->notes.push_back(shape.note);
  if (!passed.note.empty()) m->notes.push_back(passed.note);
  for (const NcclTestsRow* r : passed.rows) {
    for (const NcclTestsResult* half : {&r->out_of_place, &r->in_place}) {
      if (!half->present || !(half->time_us > 0) || r->bytes <= 0) continue;
      CollectivePoint p;
      p.op = op;
      p.ranks = shape.ranks;
      p.per_node = shape.per_node;
      p.bytes = Bytes(static_cast<double>(r->bytes));
      p.time = Duration::Microseconds(half->time_us);
      p.where = fmt::format("{}:{}", log.file, r->line);
      p.in_place = half == &r->in_place;
      m->collectives.push_back(p);
    }
  }
  return Status::Ok();
}

// Every run's points; a run refused is an error (`strict`) or passed over with its reason.
StatusOr<Measurements> FromLog(const NcclTestsLog& log, const NcclRanksGiven& given, bool strict) {
  Measurements m;
  m.file = log.file;
  m.notes = log.notes;
  for (const NcclTestsSection& s : log.sections) {
    if (m.device.empty()) m.device = s.gpu;
    StatusOr<Collective> op = ParseCollective(s.op);
    if (!op.ok()) {
      m.notes.push_back(
          fmt::format("{}:{}: the {} run (lines {}-{}) passed over: the cost model "
                      "prices no {}",
                      log.file, s.first_line, s.op, s.first_line, s.last_line, s.op));
      continue;
    }
    if (Status st = RunPoints(log, s, *op, given, &m); !st.ok()) {
      if (strict) return st;
      m.notes.push_back(st.message() + "; passed over");
    }
  }
  return m;
}

}  // namespace

StatusOr<Measurements> MeasurementsFromNcclLog(const NcclTestsLog& log,
                                               const NcclRanksGiven& given) {
  return FromLog(log, given, true);
}

Measurements MeasurementsFromNcclLog(const NcclTestsLog& log) { return *FromLog(log, {}, false); }

StatusOr<Measurements> LoadMeasurements(const std::string& path, const std::string& op,
                                        const NcclRanksGiven& given) {
  // Plain or gzipped (hardware/readers/bounded_input.h), within what ReadFile allows.
  PARASIM_ASSIGN_OR_RETURN(
      std::string text, ReadBoundedFile(path, InputLimits{kMaxInputBytes, 200, int64_t{16} << 20}));
  if (LooksLikeNcclTestsLog(text)) {
    NcclLogOptions options;
    options.op = op;
    PARASIM_ASSIGN_OR_RETURN(NcclTestsLog log, ParseNcclTestsLog(text, path, options));
    return MeasurementsFromNcclLog(log, given);
  }
  return ParseMeasurements(text, path);
}

}  // namespace parasim
