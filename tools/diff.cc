#include "tools/diff.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "sim/parse_units.h"
#include "strategies/layout_format.h"
#include "strategies/sweep.h"

namespace parasim {
namespace {

std::string ClusterText(const Scenario& s) {
  return fmt::format("{} x {}", s.cluster.gpus(), s.cluster.gpu.name);
}

void AddMemoryRows(const StepReport& ra, const StepReport& rb, std::vector<DiffRow>* rows) {
  const size_t na = ra.peak_memory_bytes.size(), nb = rb.peak_memory_bytes.size();
  const size_t n = std::max(na, nb);
  if (n > kDiffMaxStageRows || n == 1) {
    auto worst = [](const std::vector<double>& v) {
      return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
    };
    rows->push_back({"peak memory, worst stage", "GiB", Bytes(worst(ra.peak_memory_bytes)).gib(),
                     Bytes(worst(rb.peak_memory_bytes)).gib()});
    return;
  }
  for (size_t k = 0; k < n; ++k) {
    DiffRow row{fmt::format("peak memory, stage {}", k), "GiB"};
    row.in_a = k < na;
    row.in_b = k < nb;
    if (row.in_a) row.a = Bytes(ra.peak_memory_bytes[k]).gib();
    if (row.in_b) row.b = Bytes(rb.peak_memory_bytes[k]).gib();
    rows->push_back(row);
  }
}

// The slower side's deficit by component (the sweep's WhyBehind), or the one that does not fit.
std::string Reason(const Scenario& a, const StepReport& ra, const Scenario& b,
                   const StepReport& rb) {
  if (ra.fits != rb.fits) {
    const StepReport& r = ra.fits ? rb : ra;
    const double worst = *std::max_element(r.peak_memory_bytes.begin(), r.peak_memory_bytes.end());
    return fmt::format("{} does not fit: it peaks at {:.1f} GiB of {:.1f} GiB", ra.fits ? "B" : "A",
                       Bytes(worst).gib(), Bytes(r.capacity_bytes).gib());
  }
  SweepEntry ea = EntryOf(a.layout, a.training, ra), eb = EntryOf(b.layout, b.training, rb);
  if (ra.tokens_per_s == rb.tokens_per_s) return "the same throughput";
  const bool b_ahead = rb.tokens_per_s > ra.tokens_per_s;
  return fmt::format("{} is behind {}: {}", b_ahead ? "A" : "B", b_ahead ? "B" : "A",
                     b_ahead ? WhyBehind(ea, eb) : WhyBehind(eb, ea));
}

}  // namespace

StepDiff DiffSteps(const Scenario& a, const StepReport& ra, const Scenario& b,
                   const StepReport& rb) {
  StepDiff d;
  d.a_cluster = ClusterText(a);
  d.b_cluster = ClusterText(b);
  d.a_layout = FormatLayout(a.layout, a.training, LayoutStyle::kShort);
  d.b_layout = FormatLayout(b.layout, b.training, LayoutStyle::kShort);
  const SweepEntry ea = EntryOf(a.layout, a.training, ra);
  const SweepEntry eb = EntryOf(b.layout, b.training, rb);
  d.rows = {
      {"step time", "s", ra.step_time_s, rb.step_time_s},
      {"throughput", "tokens/s", ra.tokens_per_s, rb.tokens_per_s},
      {"MFU", "%", 100 * ra.mfu, 100 * rb.mfu},
      {"compute, busiest stage", "s", ea.compute_s, eb.compute_s},
      {"pipeline bubble", "s", ea.bubble * ea.compute_s, eb.bubble * eb.compute_s},
      {"exposed TP communication", "s", ra.exposed.tp, rb.exposed.tp},
      {"exposed CP communication", "s", ra.exposed.cp, rb.exposed.cp},
      {"exposed expert all-to-all", "s", ra.exposed.ep, rb.exposed.ep},
      {"exposed pipeline transfers", "s", ra.exposed.pp, rb.exposed.pp},
      {"exposed gradient sync (DP)", "s", ra.exposed.dp, rb.exposed.dp},
  };
  AddMemoryRows(ra, rb, &d.rows);
  d.reason = Reason(a, ra, b, rb);
  return d;
}

std::string DiffValue(const DiffRow& row, bool side_b) {
  if (!(side_b ? row.in_b : row.in_a)) return "-";
  const double v = side_b ? row.b : row.a;
  if (row.unit == "s") return FormatDuration(Duration::Seconds(v));
  if (row.unit == "%") return fmt::format("{:.1f}%", v);
  if (row.unit == "GiB") return fmt::format("{:.1f} GiB", v);
  if (row.unit == "tokens/s") return fmt::format("{:.0f} tokens/s", v);
  return fmt::format("{:.4g} {}", v, row.unit);
}

std::string DiffChange(const DiffRow& row) {
  if (!row.in_a || !row.in_b) return "-";
  const double delta = row.b - row.a;
  if (row.unit == "%") return fmt::format("{:+.1f} points", delta);
  std::string abs;
  if (row.unit == "s") {
    abs = (delta < 0 ? "-" : "+") + FormatDuration(Duration::Seconds(std::fabs(delta)));
  } else if (row.unit == "GiB") {
    abs = fmt::format("{:+.1f} GiB", delta);
  } else {
    abs = fmt::format("{:+.0f} {}", delta, row.unit);
  }
  if (row.a == 0) return abs;
  return fmt::format("{} ({:+.1f}%)", abs, 100 * delta / row.a);
}

}  // namespace parasim
