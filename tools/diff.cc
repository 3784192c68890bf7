#include "tools/diff.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/enum_names.h"
#include "sim/parse_units.h"
#include "strategies/layout_format.h"
#include "strategies/sweep.h"

namespace parasim {
namespace {

std::string ClusterText(const Scenario& s) {
  return fmt::format("{} x {}", s.cluster.gpus(), s.cluster.gpu.name);
}

// The model in a side's header where the two differ (both headers showed the scenario's name).
std::string ModelText(const ModelSpec& m) {
  return fmt::format(", model {} ({:.1f}B parameters)", m.id, CountParams(m).total / 1e9);
}

// A fabric in words: "ib-ndr-400g 50.0 GB/s, efficiency 0.8, 5 us".
std::string FabricText(const FabricSpec& f) {
  return fmt::format("{} {}, efficiency {:g}, {}", f.id, FormatBandwidth(f.bandwidth), f.efficiency,
                     FormatDuration(f.latency));
}

// Whether both sides' GPUs run kernels at the same rates: their peaks, efficiencies, memory
// bandwidth and launch cost (not the name: an extended GPU's changes with its memory alone).
bool SameGpu(const GpuSpec& a, const GpuSpec& b) {
  return a.peak == b.peak && a.gemm_efficiency == b.gemm_efficiency &&
         a.gemm_efficiency_fp8 == b.gemm_efficiency_fp8 &&
         a.memory_efficiency == b.memory_efficiency && a.sustained_factor == b.sustained_factor &&
         a.attention_flash.forward == b.attention_flash.forward &&
         a.attention_flash.backward == b.attention_flash.backward &&
         a.attention_flash2.forward == b.attention_flash2.forward &&
         a.attention_flash2.backward == b.attention_flash2.backward &&
         a.compute_capability == b.compute_capability &&  // it decides the attention's kernels
         a.launch_overhead == b.launch_overhead && a.sms == b.sms &&
         a.hbm_bandwidth.bytes_per_second() == b.hbm_bandwidth.bytes_per_second();
}

void AddMemoryRows(const StepReport& ra, const StepReport& rb, std::vector<DiffRow>* rows) {
  const size_t na = ra.peak_memory_bytes.size(), nb = rb.peak_memory_bytes.size();
  const size_t n = std::max(na, nb);
  if (n > kDiffMaxStageRows || n == 1) {
    auto worst = [](const std::vector<double>& v) {
      return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
    };
    rows->push_back({"peak memory, worst stage", DiffUnit::kGiB,
                     Bytes(worst(ra.peak_memory_bytes)).gib(),
                     Bytes(worst(rb.peak_memory_bytes)).gib()});
    return;
  }
  for (size_t k = 0; k < n; ++k) {
    DiffRow row{fmt::format("peak memory, stage {}", k), DiffUnit::kGiB};
    row.in_a = k < na;
    row.in_b = k < nb;
    if (row.in_a) row.a = Bytes(ra.peak_memory_bytes[k]).gib();
    if (row.in_b) row.b = Bytes(rb.peak_memory_bytes[k]).gib();
    rows->push_back(row);
  }
}

// The slower side's deficit by component (the sweep's WhyBehind), or the one that does not fit;
// where the sides train another model or on another GPU count, that first.
std::string Reason(const Scenario& a, const StepReport& ra, const SweepEntry& ea, const Scenario& b,
                   const StepReport& rb, const SweepEntry& eb) {
  const bool same_gpu = SameGpu(a.cluster.gpu, b.cluster.gpu);
  if (ra.fits != rb.fits) {
    const SweepEntry& e = ra.fits ? eb : ea;
    return fmt::format("{} does not fit: it peaks at {:.1f} GiB of {:.1f} GiB", ra.fits ? "B" : "A",
                       Bytes(e.peak_memory_bytes).gib(),
                       Bytes((ra.fits ? rb : ra).capacity_bytes).gib());
  }
  std::string out;
  if (!ra.fits) {
    out = fmt::format(
        "neither fits: A peaks at {:.1f} GiB of {:.1f} GiB, B at {:.1f} GiB of {:.1f} GiB; ",
        Bytes(ea.peak_memory_bytes).gib(), Bytes(ra.capacity_bytes).gib(),
        Bytes(eb.peak_memory_bytes).gib(), Bytes(rb.capacity_bytes).gib());
  }
  if (a.model != b.model) {
    out += fmt::format(
        "the sides train different models ({} and {}), so their steps do not "
        "compare part by part; ",
        a.model.id, b.model.id);
  } else if (a.cluster.gpus() != b.cluster.gpus()) {
    const double pa = ra.tokens_per_s / static_cast<double>(a.cluster.gpus());
    const double pb = rb.tokens_per_s / static_cast<double>(b.cluster.gpus());
    out += fmt::format("the sides run on {} and {} GPUs ({:.0f} and {:.0f} tokens/s a GPU); ",
                       a.cluster.gpus(), b.cluster.gpus(), pa, pb);
    // Steps of other work a GPU compare per GPU, not part by part (a step of twice the
    // micro-batches a replica had read as '+14.40 s compute (recompute or smaller GEMMs)', the
    // side ahead a GPU called behind).
    auto per_gpu = [](const Scenario& s) {
      return static_cast<double>(s.training.global_batch) *
             static_cast<double>(s.training.seq_len) / static_cast<double>(s.cluster.gpus());
    };
    if (per_gpu(a) != per_gpu(b) && pa != pb) {
      return out + fmt::format(
                       "{} is behind {} a GPU: {:.1f}% fewer tokens/s a GPU; their steps do "
                       "{:.0f} and {:.0f} tokens a GPU, so they do not compare part by part",
                       pb > pa ? "A" : "B", pb > pa ? "B" : "A",
                       100 * (1 - std::min(pa, pb) / std::max(pa, pb)), per_gpu(a), per_gpu(b));
    }
  }
  if (ra.tokens_per_s == rb.tokens_per_s) return out + "the same throughput";
  const bool b_ahead = rb.tokens_per_s > ra.tokens_per_s;
  if (a.model != b.model) {
    return out + fmt::format("{} has {:.1f}% less throughput", b_ahead ? "A" : "B",
                             100 * (1 - std::min(ra.tokens_per_s, rb.tokens_per_s) /
                                            std::max(ra.tokens_per_s, rb.tokens_per_s)));
  }
  return out + fmt::format("{} is behind {}: {}", b_ahead ? "A" : "B", b_ahead ? "B" : "A",
                           b_ahead ? WhyBehind(ea, eb, &ra, &rb, same_gpu)
                                   : WhyBehind(eb, ea, &rb, &ra, same_gpu));
}

}  // namespace

StepDiff DiffSteps(const Scenario& a, const StepReport& ra, const Scenario& b,
                   const StepReport& rb) {
  StepDiff d;
  d.a_cluster = ClusterText(a);
  d.b_cluster = ClusterText(b);
  for (const auto& [fa, fb] : {std::pair{&a.cluster.intra, &b.cluster.intra},
                               std::pair{&a.cluster.inter, &b.cluster.inter}}) {
    // The same GPUs on other fabrics (a fabric extended, or another id): show both.
    if (FabricText(*fa) != FabricText(*fb) && fa->id != "none" && fb->id != "none") {
      d.a_cluster += ", " + FabricText(*fa);
      d.b_cluster += ", " + FabricText(*fb);
    }
  }
  if (a.model != b.model) {
    d.a_cluster += ModelText(a.model);
    d.b_cluster += ModelText(b.model);
  }
  d.a_layout = FormatLayout(a.layout, a.training, LayoutStyle::kShort);
  d.b_layout = FormatLayout(b.layout, b.training, LayoutStyle::kShort);
  const SweepEntry ea = EntryOf(a.layout, a.training, ra);
  const SweepEntry eb = EntryOf(b.layout, b.training, rb);
  d.rows = {{"step time", DiffUnit::kSeconds, ra.step_time_s, rb.step_time_s},
            {"throughput", DiffUnit::kTokensPerSecond, ra.tokens_per_s, rb.tokens_per_s},
            {"MFU", DiffUnit::kPercent, 100 * ra.mfu, 100 * rb.mfu}};
  // The busiest stage's step part by part: a partition, adding up to the step time.
  const auto pa = StepParts(ra), pb = StepParts(rb);
  for (int i = 0; i < kNumStepParts; ++i) {
    DiffRow row{std::string(StepPartName(pa[i].part)), DiffUnit::kSeconds, pa[i].s, pb[i].s};
    row.step_part = true;
    d.rows.push_back(row);
  }
  AddMemoryRows(ra, rb, &d.rows);
  d.reason = Reason(a, ra, ea, b, rb, eb);
  return d;
}

namespace {
constexpr EnumNames<DiffUnit, 4> kDiffUnits("unit", {{{DiffUnit::kSeconds, "s"},
                                                      {DiffUnit::kTokensPerSecond, "tokens/s"},
                                                      {DiffUnit::kPercent, "%"},
                                                      {DiffUnit::kGiB, "GiB"}}});
}  // namespace

std::string_view DiffUnitName(DiffUnit u) { return kDiffUnits.Name(u); }

std::string DiffValue(const DiffRow& row, bool side_b) {
  if (!(side_b ? row.in_b : row.in_a)) return "-";
  const double v = side_b ? row.b : row.a;
  switch (row.unit) {
    case DiffUnit::kSeconds:
      return FormatSeconds(v);
    case DiffUnit::kPercent:
      return fmt::format("{:.1f}%", v);
    case DiffUnit::kGiB:
      return fmt::format("{:.1f} GiB", v);
    case DiffUnit::kTokensPerSecond:
      return fmt::format("{:.0f} tokens/s", v);
  }
  return "?";
}

std::string DiffChange(const DiffRow& row) {
  if (!row.in_a || !row.in_b) return "-";
  const double delta = row.b - row.a;
  std::string abs;
  switch (row.unit) {
    case DiffUnit::kPercent:
      return fmt::format("{:+.1f} points", delta);
    case DiffUnit::kSeconds:
      abs = (delta < 0 ? "-" : "+") + FormatSeconds(std::fabs(delta));
      break;
    case DiffUnit::kGiB:
      abs = fmt::format("{:+.1f} GiB", delta);
      break;
    case DiffUnit::kTokensPerSecond:
      abs = fmt::format("{:+.0f} tokens/s", delta);
      break;
  }
  if (row.a == 0) return abs;
  return fmt::format("{} ({:+.1f}%)", abs, 100 * delta / row.a);
}

}  // namespace parasim
