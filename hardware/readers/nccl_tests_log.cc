#include "hardware/readers/nccl_tests_log.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "hardware/readers/nccl_log_lines.h"
#include "hardware/readers/nccl_tests_columns.h"
#include "sim/utf8.h"

namespace parasim {

namespace {

struct OpAlias {
  std::string_view from, to;
};
// The programs of NVIDIA/nccl-tests src/ (all_reduce.cu ... hypercube.cu; 2.19.6), each built as
// <name>_perf (and <name>_perf_mpi with MPI=1), and the spellings people give them.
constexpr OpAlias kOps[] = {
    {"all_reduce", "all_reduce"},
    {"allreduce", "all_reduce"},
    {"all_gather", "all_gather"},
    {"allgather", "all_gather"},
    {"reduce_scatter", "reduce_scatter"},
    {"reducescatter", "reduce_scatter"},
    {"alltoall", "alltoall"},
    {"all_to_all", "alltoall"},
    {"alltoallv", "alltoallv"},
    {"sendrecv", "sendrecv"},
    {"broadcast", "broadcast"},
    {"reduce", "reduce"},
    {"gather", "gather"},
    {"scatter", "scatter"},
    {"hypercube", "hypercube"},
};

// The op whose name ends `s`, the longest that does (all_reduce, not reduce, in
// "node1_all_reduce"), when a start or a separator (not a letter or digit) comes before it; ""
// otherwise ("xall_reduce" is no reduce).
std::string_view OpEnding(std::string_view s) {
  const OpAlias* best = nullptr;
  for (const OpAlias& a : kOps) {
    if (s.ends_with(a.from) && (!best || a.from.size() > best->from.size())) best = &a;
  }
  if (!best) return "";
  const size_t at = s.size() - best->from.size();
  return at > 0 && std::isalnum(static_cast<unsigned char>(s[at - 1])) ? "" : best->to;
}

}  // namespace

std::string NcclTestsOp(std::string_view name) {
  std::string s(name.substr(
      name.find_last_of('/') == std::string_view::npos ? 0 : name.find_last_of('/') + 1));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const OpAlias& a : kOps) {
    if (s == a.from) return std::string(a.to);
  }
  // "<op>_perf" anywhere in the name: all_reduce_perf_mpi, node1_all_reduce_perf.log.
  for (size_t perf = s.find("_perf"); perf != std::string::npos; perf = s.find("_perf", perf + 1)) {
    if (std::string_view op = OpEnding(std::string_view(s).substr(0, perf)); !op.empty()) {
      return std::string(op);
    }
  }
  return "";
}

namespace {

constexpr std::string_view kOpList =
    "all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast, reduce, gather, "
    "scatter, alltoallv, hypercube";

// Ops whose rows print redop "none" (no reduction), and those that reduce.
bool PrintsNoReduction(std::string_view op) {
  return op == "all_gather" || op == "alltoall" || op == "alltoallv" || op == "broadcast" ||
         op == "gather" || op == "scatter";
}
bool Reduces(std::string_view op) {
  return op == "all_reduce" || op == "reduce_scatter" || op == "reduce";
}

enum RunStartKind { kVersion = 1, kStarting = 2, kThreads = 4 };

// What the reader knows of a section beyond what it keeps.
struct SectionState {
  std::optional<NcclColumns> columns;
  int64_t columns_line = 0;
  int seen = 0;  // RunStartKind bits
  bool concluded = false;
  using Key = std::tuple<int64_t, std::string, std::string, int64_t>;  // bytes type redop root
  std::map<Key, int64_t> sizes;                                        // -> line
  // The table's first sweep, in order, and where a repeated sweep (-N, --run_cycles) has got to.
  std::vector<Key> sweep;
  size_t cycle_at = 0;
  bool cycling = false;
  std::map<int64_t, std::string> device_hosts;  // rank -> host
};

class Parser {
 public:
  Parser(std::string file, const NcclLogOptions& o) : options_(o) { log_.file = std::move(file); }
  Status Line(std::string_view raw, int64_t no);
  void TooLong(int64_t no, int64_t bytes) {
    ++junk_;
    if (junk_ <= 5) {
      log_.notes.push_back(
          fmt::format("{}:{}: a line of {} bytes, not a log line; skipped", log_.file, no, bytes));
    }
  }
  StatusOr<NcclTestsLog> Finish();

 private:
  // What a line is to the section structure: a run-start line (with its RunStartKind bit), a
  // device line, the column header, or a result row.
  enum class Trigger { kRunStart, kDevice, kColumns, kRow };
  bool NeedsNew(Trigger t, int kind_bit = 0) const;
  // The section `t` at line `no` belongs to: the current one, or a new one.
  NcclTestsSection& SectionFor(Trigger t, int64_t no, int kind_bit = 0);
  Status RunStart(const NcclLine& l, int64_t no);
  Status Device(const NcclLine& l, int64_t no);
  Status Row(const NcclLine& l, int64_t no);
  Status Repeated(int64_t no, const NcclTestsRow& row, int64_t first);
  std::string_view raw_;  // the line being read, for a field's column
  void Columns(const NcclLine& l, int64_t no);
  void Footer(const NcclLine& l, int64_t no);
  Status Where(int64_t no, std::string what) const {
    return InvalidArgument(InputError(log_.file, no, 1, what));
  }
  Status CheckSections();
  Status ResolveOps();

  const NcclLogOptions& options_;
  NcclTestsLog log_;
  std::vector<SectionState> state_;
  std::map<int64_t, int64_t> start_prefix_ranks_;  // launcher rank -> first run-start line
  int64_t junk_ = 0;
};

// A run's header lines come once each, before its devices, columns and rows; a line that
// cannot continue the current section starts the next one.
bool Parser::NeedsNew(Trigger t, int kind_bit) const {
  if (log_.sections.empty() || state_.back().concluded) return true;
  const NcclTestsSection& s = log_.sections.back();
  const SectionState& st = state_.back();
  switch (t) {
    case Trigger::kRunStart:
      return !s.rows.empty() || (st.seen & kind_bit) || !s.devices.empty() || st.columns;
    case Trigger::kDevice:
      return !s.rows.empty() || st.columns.has_value();
    case Trigger::kColumns:
      return !s.rows.empty();
    case Trigger::kRow:
      return false;
  }
  return false;
}

NcclTestsSection& Parser::SectionFor(Trigger t, int64_t no, int kind_bit) {
  if (NeedsNew(t, kind_bit)) {
    log_.sections.emplace_back();
    log_.sections.back().first_line = no;
    state_.emplace_back();
  }
  return log_.sections.back();
}

Status Parser::RunStart(const NcclLine& l, int64_t no) {
  const std::vector<std::string_view> f = NcclFields(l.text, true);
  const int bit = f[0] == "nThread" ? kThreads : f[0] == "nccl-tests" ? kVersion : kStarting;
  if (l.prefix_rank >= 0) start_prefix_ranks_.emplace(l.prefix_rank, no);
  NcclTestsSection& s = SectionFor(Trigger::kRunStart, no, bit);
  state_.back().seen |= bit;
  if (bit == kStarting && f.size() > 3) s.program = std::string(f[3]);
  for (size_t i = 0; bit == kThreads && i + 1 < f.size(); ++i) {
    auto num = [&](int64_t* out) { *out = std::atoll(std::string(f[i + 1]).c_str()); };
    if (f[i] == "nThread") num(&s.threads);
    if (f[i] == "nGpus") num(&s.gpus_per_thread);
    if (f[i] == "graph:") num(&s.graph_launches);
  }
  return Status::Ok();
}

// Nodes from the device lines. One host name lists each GPU once on one node (NCCL refuses two
// ranks on one GPU: "Duplicate GPU detected"), so a name listing a GPU n times is n nodes that
// share it, as containers of one image can (every pod "localhost"). A GPU is its bus id where
// the line gives one: the device index repeats on one node where each rank sees one GPU
// (CUDA_VISIBLE_DEVICES with NCCL_TESTS_DEVICE=0: every rank "device 0", bus ids apart).
void CountNodes(NcclTestsSection& s, std::vector<std::string>* notes, const std::string& file) {
  std::map<std::string, std::map<std::string, int64_t>> uses;  // host -> GPU -> ranks
  for (const NcclTestsDevice& d : s.devices) {
    ++uses[d.host][d.bus.empty() ? fmt::format("device {}", d.device) : d.bus];
  }
  s.ranks = static_cast<int64_t>(s.devices.size());
  for (const auto& [host, devices] : uses) {
    int64_t ranks = 0, nodes = 1;
    for (const auto& [device, n] : devices) {
      ranks += n;
      nodes = std::max(nodes, n);
    }
    s.nodes += nodes;
    s.per_node = std::max(s.per_node, (ranks + nodes - 1) / nodes);
    if (nodes > 1) {
      notes->push_back(fmt::format(
          "{}:{}: host {} lists one GPU for {} ranks: read as {} nodes sharing the name", file,
          s.first_line, host, nodes, nodes));
    }
  }
}

Status Parser::Device(const NcclLine& l, int64_t no) {
  NcclDeviceLine d;
  if (!ParseNcclDeviceLine(l.text, &d)) return Status::Ok();  // a "Rank" comment of another kind
  NcclTestsSection& s = SectionFor(Trigger::kDevice, no);
  SectionState& st = state_.back();
  if (auto [it, fresh] = st.device_hosts.emplace(d.rank, d.host); !fresh) {
    return Where(
        no, fmt::format(
                "rank {} is listed twice (on {} and {}) in the run that starts at line {}: its "
                "processes ran apart, each as its own 1-rank run (nccl-tests built without MPI=1, "
                "started by mpirun or srun); rebuild with MPI=1",
                d.rank, it->second, d.host, s.first_line));
  }
  s.devices.push_back({d.rank, d.host, d.device, d.bus, d.name});
  return Status::Ok();
}

// A row whose size the table held before, out of its sweep's order (`first`: the line of that
// size's first row, 0 = a size the first sweep did not hold).
Status Parser::Repeated(int64_t no, const NcclTestsRow& row, int64_t first) {
  const std::string where = first > 0 ? fmt::format("again, first at line {}", first)
                                      : "within a repeated sweep (-N) that did not hold it";
  return Where(no, fmt::format("size {} ({} {}) {}: two runs' rows in one table (outputs of "
                               "processes that ran apart, or logs pasted together without their "
                               "headers)",
                               row.bytes, row.type, row.redop, where));
}

Status Parser::Row(const NcclLine& l, int64_t no) {
  NcclTestsSection& s = SectionFor(Trigger::kRow, no);
  SectionState& st = state_.back();
  const std::vector<std::string_view> f = NcclFields(l.text);
  if (!st.columns) {
    st.columns = NcclColumns::ForFields(f.size());
    if (!st.columns) {
      return Where(
          no,
          fmt::format(
              "a result row of {} fields with no column header before it (# size count type ...); "
              "keep the log's header lines",
              f.size()));
    }
  }
  std::string_view at;
  StatusOr<NcclTestsRow> row = ParseNcclRow(f, *st.columns, &at);
  if (!row.ok()) {
    std::string what = row.status().message();
    if (st.columns_line > 0) what += fmt::format(" (column header at line {})", st.columns_line);
    // The field's column in the line as the file holds it (prefixes and indentation counted).
    const bool inside = !at.empty() && at.data() >= raw_.data() &&
                        at.data() + at.size() <= raw_.data() + raw_.size();
    const int64_t col = inside ? static_cast<int64_t>(at.data() - raw_.data()) + 1 : 1;
    return InvalidArgument(InputError(log_.file, no, col, what));
  }
  row->line = no;
  // A size of 0 bytes (nccl-tests floors a small -b to whole elements a rank, and 2.19 to 16
  // bytes: "0  0  float none" rows at the start of an all_gather sweep) measures nothing.
  if (row->bytes == 0) return Status::Ok();
  const auto key = std::make_tuple(row->bytes, row->type, row->redop, row->root);
  // The same size again is kept as more samples where it is the same sweep's rounding (the row
  // before it) or the whole sweep again in the same order (nccl-tests -N / --run_cycles prints
  // every cycle under one header). Any other repeat is two runs' rows in one table.
  // A new size where a repeated sweep ends is the next sweep's first (-N with -o all, -d all or
  // -r all repeats each op's sweep N times, then goes on to the next op's).
  if (st.cycling && st.cycle_at == st.sweep.size() && st.sizes.count(key) == 0) {
    st.cycling = false;
    st.sweep.clear();
  }
  if (!st.cycling) {
    auto [it, fresh] = st.sizes.emplace(key, no);
    if (!fresh && st.sweep.back() != key) {
      if (st.sweep.front() != key) return Repeated(no, *row, it->second);
      st.cycling = true;
      st.cycle_at = 0;
    }
  }
  if (st.cycling) {
    if (st.cycle_at == st.sweep.size()) st.cycle_at = 0;
    if (st.sweep[st.cycle_at] != key) {
      auto it = st.sizes.find(key);
      return Repeated(no, *row, it == st.sizes.end() ? 0 : it->second);
    }
    ++st.cycle_at;
  } else {
    st.sweep.push_back(key);
  }
  s.rows.push_back(std::move(row).value());
  s.last_line = no;
  return Status::Ok();
}

// The column header; a "# size ..." comment that names no table is passed over.
void Parser::Columns(const NcclLine& l, int64_t no) {
  const std::vector<std::string_view> f = NcclFields(l.text, true);
  std::optional<NcclColumns> c = NcclColumns::FromHeader(f);
  if (!c) return;
  NcclTestsSection& s = SectionFor(Trigger::kColumns, no);
  state_.back().columns = c;
  state_.back().columns_line = no;
  s.columns.assign(f.begin(), f.end());
  s.cputime = c->cputime;
}

void Parser::Footer(const NcclLine& l, int64_t no) {
  if (log_.sections.empty()) return;
  NcclTestsSection& s = log_.sections.back();
  const std::vector<std::string_view> f = NcclFields(l.text, true);
  const auto colon = std::find(f.begin(), f.end(), ":");
  if (f[0] == "Collective") {
    state_.back().concluded = true;
  } else if (f[0] == "Avg" && colon != f.end() && colon + 1 != f.end()) {
    s.avg_busbw_gbps = std::atof(std::string(*(colon + 1)).c_str());
  } else if (f[0] == "Out" && colon != f.end() && colon + 1 != f.end()) {
    s.out_of_bounds = std::atoll(std::string(*(colon + 1)).c_str());
    s.out_of_bounds_line = no;
  }
}

Status Parser::Line(std::string_view raw, int64_t no) {
  raw_ = raw;
  const NcclLine l = ClassifyNcclLine(raw);
  switch (l.kind) {
    case NcclLineKind::kRunStart:
      return RunStart(l, no);
    case NcclLineKind::kDevice:
      return Device(l, no);
    case NcclLineKind::kColumns:
      Columns(l, no);
      return Status::Ok();
    case NcclLineKind::kRow:
      return Row(l, no);
    case NcclLineKind::kFooter:
      Footer(l, no);
      return Status::Ok();
    default:
      return Status::Ok();
  }
}

// Sections without rows go (with a note); the rest get their ranks, nodes and GPU.
Status Parser::CheckSections() {
  if (start_prefix_ranks_.size() > 1) {
    auto a = start_prefix_ranks_.begin(), b = std::next(a);
    return Where(
        b->second,
        fmt::format(
            "ranks {} and {} each printed their own run header (lines {} and {}): the {} processes "
            "ran apart, each as a 1-rank run (nccl-tests built without MPI=1); rebuild with MPI=1",
            a->first, b->first, a->second, b->second, start_prefix_ranks_.size()));
  }
  std::vector<NcclTestsSection> kept;
  for (NcclTestsSection& s : log_.sections) {
    if (s.rows.empty()) {
      log_.notes.push_back(fmt::format(
          "{}:{}: a run header without result rows (the run failed or was cut); skipped", log_.file,
          s.first_line));
      continue;
    }
    CountNodes(s, &log_.notes, log_.file);
    if (!s.devices.empty()) s.gpu = s.devices.front().name;
    for (const NcclTestsDevice& d : s.devices) {
      if (d.name != s.gpu) {
        log_.notes.push_back(fmt::format("{}:{}: the run mixes GPUs ({} and {})", log_.file,
                                         s.first_line, s.gpu, d.name));
        break;
      }
    }
    kept.push_back(std::move(s));
  }
  log_.sections = std::move(kept);
  if (log_.sections.empty()) {
    return Where(1, "no result rows (size count type ... time algbw busbw) in this nccl-tests log");
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> GivenOps(const std::string& text, const std::string& file) {
  std::vector<std::string> ops;
  size_t start = 0;
  while (!text.empty() && start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string one = text.substr(start, comma - start);
    const std::string op = NcclTestsOp(one);
    if (op.empty()) {
      return InvalidArgument(InputError(
          file, 1, 1, fmt::format("--op {}: not an nccl-tests program; one of {}", one, kOpList)));
    }
    ops.push_back(op);
    start = comma + 1;
  }
  return ops;
}

// Whether `s`'s rows fit `op`: "none" for the ops that do not reduce, a reduction for those that
// do. An error naming the first row that does not.
Status RowsFit(const NcclTestsSection& s, const std::string& file) {
  for (const NcclTestsRow& r : s.rows) {
    const bool none = r.redop == "none" || r.redop.empty();
    if ((Reduces(s.op) && none) || (PrintsNoReduction(s.op) && !none)) {
      return InvalidArgument(InputError(
          file, r.line, 1,
          fmt::format(
              "a row with redop '{}' in a run read as {} ({}): {} runs print {}; give the op of "
              "each run, comma-separated in file order (--op all_reduce,all_gather)",
              r.redop.empty() ? "(no redop column)" : r.redop, s.op, s.op_from, s.op,
              Reduces(s.op) ? "a reduction (sum, ...)" : "none")));
    }
  }
  return Status::Ok();
}

Status Parser::ResolveOps() {
  PARASIM_ASSIGN_OR_RETURN(std::vector<std::string> given, GivenOps(options_.op, log_.file));
  const size_t n = log_.sections.size();
  if (given.size() > 1 && given.size() != n) {
    return InvalidArgument(InputError(
        log_.file, 1, 1, fmt::format("--op names {} ops, the log holds {} runs", given.size(), n)));
  }
  for (size_t i = 0; i < n; ++i) {
    NcclTestsSection& s = log_.sections[i];
    const std::string header = NcclTestsOp(s.program);
    const std::string g = given.empty() ? "" : given.size() == 1 ? given[0] : given[i];
    if (!s.program.empty() && header.empty()) {
      return Where(s.first_line,
                   fmt::format("program {} is no nccl-tests program ({})", s.program, kOpList));
    }
    if (!header.empty() && !g.empty() && header != g) {
      return Where(
          s.first_line,
          fmt::format(
              "the log's header says {} ({}), but the op given is {}: drop --op, or give the log "
              "of {}_perf",
              s.program, header, g, g));
    }
    s.op = header.empty() ? g : header;
    s.op_from = !header.empty() ? fmt::format("the header at line {}", s.first_line) : "--op";
    if (s.op.empty() && n == 1) {
      s.op = NcclTestsOp(std::filesystem::path(log_.file).filename().string());
      s.op_from = "the file name";
    }
    if (s.op.empty()) {
      // A file name's X_perf names one program: it says the op of a log of one run only.
      const std::string named = NcclTestsOp(std::filesystem::path(log_.file).filename().string());
      const std::string why =
          n == 1 || named.empty()
              ? "no X_perf in the file name"
              : fmt::format(
                    "the file name's {}_perf names one program, and the file holds {} "
                    "runs",
                    named, n);
      return Where(
          s.first_line,
          fmt::format(
              "cannot tell which nccl-tests program wrote {} (no \"Collective test starting\" "
              "line, {}); pass --op{}, one of {}",
              n == 1 ? "this log"
                     : fmt::format("the run of lines {}-{}", s.first_line, s.last_line),
              why, n == 1 ? "" : " with one op per run, comma-separated", kOpList));
    }
    PARASIM_RETURN_IF_ERROR(RowsFit(s, log_.file));
  }
  return Status::Ok();
}

StatusOr<NcclTestsLog> Parser::Finish() {
  if (junk_ > 5) {
    log_.notes.push_back(fmt::format("{}: {} over-long lines skipped in all", log_.file, junk_));
  }
  PARASIM_RETURN_IF_ERROR(CheckSections());
  PARASIM_RETURN_IF_ERROR(ResolveOps());
  return std::move(log_);
}

}  // namespace

bool LooksLikeNcclTestsLog(std::string_view text) {
  // A line of the log's own: a run's start ("# nThread ...", "# Collective test starting: ...",
  // "# nccl-tests version ...") or a table's column header ("#  size  count  type  redop  root
  // time  algbw  busbw #wrong ...", a table pasted alone), as no YAML measurements file holds;
  // the words anywhere else (a comment naming nccl-tests) do not make a log.
  const TextEncoding e = DetectEncoding(text);
  if (!e.utf8()) return false;  // a UTF-16 or UTF-32 file is no log this reader can read
  size_t start = e.mark;        // UTF-8's mark passed over
  while (start < text.size()) {
    const size_t nl = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    if (line.size() > 4096) continue;
    const NcclLine l = ClassifyNcclLine(line);
    if (l.kind == NcclLineKind::kRunStart) return true;
    if (l.kind == NcclLineKind::kColumns && NcclColumns::FromHeader(NcclFields(l.text, true))) {
      return true;
    }
  }
  return false;
}

StatusOr<NcclTestsLog> ReadNcclTestsLog(const std::string& path, const NcclLogOptions& options) {
  PARASIM_ASSIGN_OR_RETURN(std::unique_ptr<BoundedInput> in,
                           BoundedInput::Open(path, options.limits));
  Parser p(path, options);
  LineReader lines(in.get(), options.max_line_bytes);
  while (lines.Next()) {
    if (lines.too_long()) {
      p.TooLong(lines.number(), lines.line_bytes());
      continue;
    }
    PARASIM_RETURN_IF_ERROR(p.Line(lines.line(), lines.number()));
  }
  PARASIM_RETURN_IF_ERROR(lines.status());
  return p.Finish();
}

StatusOr<NcclTestsLog> ParseNcclTestsLog(std::string_view text, const std::string& file,
                                         const NcclLogOptions& options) {
  const TextEncoding e = DetectEncoding(text);
  if (!e.utf8()) return InvalidArgument(fmt::format("{}:1:1: error: {}", file, NotUtf8Message(e)));
  Parser p(file, options);
  int64_t no = 0;
  size_t start = e.mark;  // a UTF-8 byte-order mark (Windows editors write one) passed over
  while (start < text.size()) {
    const size_t nl = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, nl - start);
    ++no;
    if (line.size() > options.max_line_bytes) {
      p.TooLong(no, static_cast<int64_t>(line.size()));
    } else {
      PARASIM_RETURN_IF_ERROR(p.Line(line, no));
    }
    start = nl + 1;
  }
  return p.Finish();
}

}  // namespace parasim
