#include "hardware/readers/nccl_tests_checks.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace parasim {
namespace {

// The c of busbw = algbw x c (n-1)/n, for the ops whose factor depends on n (NVIDIA/nccl-tests
// src/all_reduce.cu, all_gather.cu, reduce_scatter.cu, alltoall.cu, gather.cu, scatter.cu GetBw,
// 2.19.6; unchanged since the first commit for those it had).
std::optional<double> Slope(std::string_view op) {
  if (op == "all_reduce") return 2.0;
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall" || op == "gather" ||
      op == "scatter") {
    return 1.0;
  }
  return std::nullopt;
}

std::string FactorText(std::string_view op) {
  const std::optional<double> c = Slope(op);
  if (!c) return "busbw = algbw";
  return *c == 2 ? "busbw = algbw x 2(n-1)/n" : "busbw = algbw x (n-1)/n";
}

// Half a unit of the last digit nccl-tests prints of a bandwidth: src/util.cu getFloatStr(v, 6)
// prints "%6.2f", else "%6.1f", else "%6.0f", whichever fits six characters (2.13 on; before,
// "%6.2f" always, which rounds finer).
double Rounding(double v) { return v < 999.995 ? 0.005 : v < 9999.95 ? 0.05 : 0.5; }

constexpr double kInf = std::numeric_limits<double>::infinity();

// What the rows' busbw/algbw say of n: n lies in [lo, hi] (bounds from the rounding of the
// printed values), each bound set by the row at its line.
struct RankBounds {
  bool checked = false;
  double lo = 1, hi = kInf;
  int64_t lo_line = 0, hi_line = 0;
  double ratio = 0;  // busbw/algbw of the row with the largest algbw (the most precise)
  int64_t ratio_line = 0;
  double best_algbw = 0;
};

RankBounds BoundsOf(const NcclTestsSection& s, double c) {
  RankBounds b;
  for (const NcclTestsRow& r : s.rows) {
    for (const NcclTestsResult* h : {&r.out_of_place, &r.in_place}) {
      const double ha = Rounding(h->algbw_gbps), hb = Rounding(h->busbw_gbps);
      if (!h->present || h->algbw_gbps <= 2 * ha) continue;
      b.checked = true;
      const double flo = std::max(0.0, (h->busbw_gbps - hb) / (h->algbw_gbps + ha)) / c;
      const double fhi = (h->busbw_gbps + hb) / (h->algbw_gbps - ha) / c;
      const double nlo = flo >= 1 ? kInf : 1 / (1 - flo);
      const double nhi = fhi >= 1 ? kInf : 1 / (1 - fhi);
      if (nlo > b.lo) b.lo = nlo, b.lo_line = r.line;
      if (nhi < b.hi) b.hi = nhi, b.hi_line = r.line;
      if (h->algbw_gbps > b.best_algbw) {
        b.best_algbw = h->algbw_gbps;
        b.ratio = h->busbw_gbps / h->algbw_gbps;
        b.ratio_line = r.line;
      }
    }
  }
  return b;
}

Status At(const std::string& file, int64_t line, const std::string& what) {
  return InvalidArgument(InputError(file, std::max<int64_t>(1, line), 1, what));
}

std::string RunName(const NcclTestsSection& s) {
  return fmt::format("the {} run (lines {}-{})", s.op, s.first_line, s.last_line);
}

std::string HeaderSays(const NcclTestsSection& s) {
  if (s.threads <= 0) return "no nThread header";
  return fmt::format("a header of nThread {} nGpus {} (the GPUs of one process)", s.threads,
                     s.gpus_per_thread);
}

constexpr std::string_view kAsk =
    "keep the device lines the run printed under \"# Using devices\" (\"#  Rank  0 Group  0 Pid "
    "... device  0 [...] NAME\")";

// The rank count the rows allow, as `n` (0: none); `open` when more than one fits.
struct Candidates {
  int64_t n = 0;
  bool open = false;
};

Candidates Fitting(const RankBounds& b, int64_t multiple_of) {
  Candidates c;
  if (b.lo > b.hi * (1 + 1e-12)) return c;
  const double first = std::ceil(b.lo - 1e-9), last = std::floor(b.hi + 1e-9);
  const int64_t step = std::max<int64_t>(1, multiple_of);
  if (!std::isfinite(last) || last - first > 1e6) {
    c.open = true;
    return c;
  }
  for (auto k = static_cast<int64_t>(first); k <= static_cast<int64_t>(last); ++k) {
    if (k < 1 || k % step != 0) continue;
    if (c.n > 0) {
      c.open = true;
      return c;
    }
    c.n = k;
  }
  return c;
}

// The rank count of a run without device lines.
StatusOr<NcclRunShape> RanksFromRows(const NcclTestsSection& s, const std::string& file,
                                     const NcclRanksGiven& given) {
  NcclRunShape out;
  const int64_t n0 = s.threads > 0 ? s.threads * std::max<int64_t>(1, s.gpus_per_thread) : 0;
  const int64_t first = s.rows.empty() ? s.first_line : s.rows.front().line;
  const std::optional<double> c = Slope(s.op);
  const RankBounds b = c ? BoundsOf(s, *c) : RankBounds{};
  const std::string said = b.checked
                               ? fmt::format("busbw/algbw of {:.4g} at line {} ({} prints {})",
                                             b.ratio, b.ratio_line, s.op, FactorText(s.op))
                               : "";
  if (b.checked && b.lo > b.hi * (1 + 1e-12)) {
    return At(file, b.lo_line,
              fmt::format("the busbw/algbw of lines {} and {} fit no single rank count ({}: {}): "
                          "rows edited, or of different runs?",
                          b.hi_line, b.lo_line, s.op, FactorText(s.op)));
  }
  if (given.ranks > 0) {
    if (b.checked && (given.ranks < b.lo - 1e-9 || given.ranks > b.hi + 1e-9)) {
      return At(file, b.ratio_line,
                fmt::format("--ranks {} disagrees with {} of {}: its rows were timed over "
                            "another rank count",
                            given.ranks, said, RunName(s)));
    }
    out.ranks = given.ranks;
  } else if (b.checked) {
    const bool header_fits = n0 > 0 && n0 >= b.lo - 1e-9 && n0 <= b.hi + 1e-9;
    const Candidates k = header_fits ? Candidates{n0, false} : Fitting(b, n0);
    if (k.n == 0 || k.open) {
      return At(file, first,
                fmt::format("{} has no device lines and {}; its rows' {} leave the rank count "
                            "open{}: {}, or pass --ranks N",
                            RunName(s), HeaderSays(s), said,
                            n0 > 0 ? fmt::format(" (nor fit {} x a number of processes)", n0) : "",
                            kAsk));
    }
    out.ranks = k.n;
    if (k.n != n0) {
      out.note = fmt::format("{}:{}: {} has no device lines and {}; its rows' {} say {} ranks",
                             file, s.first_line, RunName(s), HeaderSays(s), said, k.n);
    }
  } else if (n0 > 0) {
    out.ranks = n0;
    out.note = fmt::format(
        "{}:{}: {} has no device lines; {} ranks from the header's nThread {} x nGpus {}, which "
        "its rows cannot confirm ({} prints busbw = algbw): if several processes ran, pass "
        "--ranks and --per-node",
        file, s.first_line, RunName(s), n0, s.threads, s.gpus_per_thread, s.op);
  } else {
    return At(file, first,
              fmt::format("{} has no device lines and no nThread header, and {}'s rows do not "
                          "tell the rank count (busbw = algbw): {}, or pass --ranks N",
                          RunName(s), s.op, kAsk));
  }
  if (given.per_node > 0) {
    out.per_node = std::min(given.per_node, out.ranks);
  } else if (out.ranks == n0 || out.ranks == 1) {
    out.per_node = out.ranks;  // one process drives them all: one node
  } else {
    return At(file, first,
              fmt::format("{} has no device lines and {}; {} ranks ran{}, on nodes the log "
                          "does not say: {}, or pass --per-node N (its ranks on each node)",
                          RunName(s), HeaderSays(s), out.ranks,
                          said.empty() ? "" : fmt::format(" by its rows' {}", said), kAsk));
  }
  if (!out.note.empty()) {
    out.note += fmt::format("; fitted as {} ranks, {} per node", out.ranks, out.per_node);
  }
  return out;
}

// "14-16, 20": the lines, runs of consecutive ones joined.
std::string LineList(const std::vector<int64_t>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size();) {
    size_t j = i;
    while (j + 1 < lines.size() && lines[j + 1] == lines[j] + 1) ++j;
    out += fmt::format("{}{}", out.empty() ? "" : ", ", lines[i]);
    if (j > i) out += fmt::format("-{}", lines[j]);
    i = j + 1;
  }
  return out;
}

// Whether a half's "#wrong" counts wrong elements (nccl-tests src/util.cu writeBenchmarkLineBody
// prints it with "%6g"; "N/A" when the check did not run, -c 0).
bool Failed(const NcclTestsResult& h) {
  if (!h.present || h.wrong.empty() || h.wrong == "N/A") return false;
  double v = 0;
  auto [end, ec] = std::from_chars(h.wrong.data(), h.wrong.data() + h.wrong.size(), v);
  return ec == std::errc() && end == h.wrong.data() + h.wrong.size() && v > 0;
}

// The layouts before nccl-tests 2.13 print the largest deviation ("error", 2017's "res"), whose
// limit is DeltaMaxValue(type) x (nranks - 1) (src/common.cu of 2.12): not a count.
bool DeviationColumn(const NcclTestsSection& s) {
  return std::find(s.columns.begin(), s.columns.end(), "error") != s.columns.end() ||
         std::find(s.columns.begin(), s.columns.end(), "res") != s.columns.end();
}

}  // namespace

std::optional<double> NcclBusFactor(std::string_view op, int64_t n) {
  if (const std::optional<double> c = Slope(op)) {
    return n > 0 ? *c * static_cast<double>(n - 1) / static_cast<double>(n) : 0.0;
  }
  if (op == "broadcast" || op == "reduce" || op == "sendrecv" || op == "hypercube") return 1.0;
  return std::nullopt;
}

StatusOr<NcclRunShape> NcclRunRanks(const NcclTestsSection& s, const std::string& file,
                                    const NcclRanksGiven& given) {
  if (s.ranks <= 0) return RanksFromRows(s, file, given);
  NcclRunShape out{s.ranks, s.per_node, ""};
  const int64_t per_node = given.per_node > 0 ? std::min(given.per_node, s.ranks) : s.per_node;
  if ((given.ranks > 0 && given.ranks != s.ranks) || per_node != s.per_node) {
    return At(file, s.first_line,
              fmt::format("{}: its device lines list {} ranks, {} per node; --ranks {} "
                          "--per-node {} say otherwise (they are for logs without device lines)",
                          RunName(s), s.ranks, s.per_node, given.ranks, given.per_node));
  }
  return out;
}

StatusOr<NcclPassedRows> NcclRowsThatPassed(const NcclTestsSection& s, const std::string& file) {
  NcclPassedRows out;
  std::vector<int64_t> bad;
  const bool counts = !DeviationColumn(s);
  for (const NcclTestsRow& r : s.rows) {
    if (counts && (Failed(r.out_of_place) || Failed(r.in_place))) {
      bad.push_back(r.line);
    } else {
      out.rows.push_back(&r);
    }
  }
  const std::string footer = s.out_of_bounds > 0
                                 ? fmt::format(" (line {}: Out of bounds values : {} FAILED)",
                                               s.out_of_bounds_line, s.out_of_bounds)
                                 : "";
  if (!bad.empty() && out.rows.empty()) {
    return At(file, bad.front(),
              fmt::format("every row of {} failed nccl-tests' data check (#wrong is not 0 on "
                          "lines {}){}: its times are of transfers that went wrong; find the "
                          "fault and measure again",
                          RunName(s), LineList(bad), footer));
  }
  if (bad.empty() && s.out_of_bounds > 0) {
    return At(file, s.out_of_bounds_line,
              fmt::format("{} failed nccl-tests' data check ({} values out of bounds), and its "
                          "rows do not say which ({}): measure again",
                          RunName(s), s.out_of_bounds,
                          counts ? "no row's #wrong is above 0"
                                 : "its error column is a deviation, not a count"));
  }
  if (!bad.empty()) {
    out.note = fmt::format(
        "{}: lines {}: rows of {} whose #wrong is not 0 (nccl-tests' data check failed){}; left "
        "out of the fit",
        file, LineList(bad), RunName(s), footer);
  }
  return out;
}

}  // namespace parasim
