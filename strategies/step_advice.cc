#include "strategies/step_advice.h"

#include <fmt/core.h>

#include <algorithm>

#include "strategies/memory.h"
#include "strategies/placement.h"

namespace parasim {

namespace {

// The seeds' anti-patterns (KNOWLEDGE.md, seed 004): TP groups that straddle nodes; pipelines
// with fewer micro-batches than stages; a global batch smaller than the number of DP ranks.
void LayoutWarnings(const StepReport& r, const Training& training, const Layout& layout,
                    const ClusterSpec& cluster, std::vector<std::string>* out) {
  GroupPlacement tp = Placement(layout, cluster).Group(GroupKind::kTp);
  if (tp.size > tp.per_node) {
    const bool rack = cluster.domain() > cluster.gpus_per_node;  // a domain of several nodes
    // Within the domain, the rank order put another dimension inside TP (a review: "keep tp <=
    // 8" was advised to a TP2 that `order: [dp, tp, ...]` spread over nodes).
    const int64_t domain = cluster.domain();
    const std::string fix =
        layout.tp <= domain && domain % layout.tp == 0
            ? fmt::format("put tp first in parallelism.order so TP stays on {}", cluster.intra.id)
            : fmt::format("keep tp <= {} and dividing it so TP stays on {}", domain,
                          cluster.intra.id);
    out->push_back(
        fmt::format("TP group of {} spans {} ({} GPUs {}): every layer's TP "
                    "collectives cross {}; {}",
                    layout.tp, rack ? "NVLink domains" : "nodes", tp.per_node,
                    rack ? "each" : "per node", cluster.inter.id, fix));
  }
  if (layout.pp > 1 && r.micro_batches < layout.pp) {
    out->push_back(fmt::format(
        "{} micro-batches for {} pipeline stages: the schedule's bubble alone is {} of the step; "
        "use "
        "at least {} micro-batches (smaller micro_batch or larger global_batch) or fewer stages",
        r.micro_batches, layout.pp, Percent(r.ideal_bubble_fraction),
        kAdvisedMicroBatchesPerStage * layout.pp));
  }
  if (training.global_batch < layout.dp) {
    out->push_back(fmt::format("global batch {} is smaller than the {} data-parallel ranks",
                               training.global_batch, layout.dp));
  }
}

}  // namespace

std::vector<std::string> StepWarnings(const StepReport& r, const ModelSpec& model,
                                      const Training& training, const Layout& layout,
                                      const ClusterSpec& cluster) {
  std::vector<std::string> out;
  LayoutWarnings(r, training, layout, cluster, &out);
  // Seed 004: gradient accumulation when the batch already fits.
  if (layout.pp == 1 && r.micro_batches > 1) {
    Training bigger = training;
    bigger.micro_batch = training.micro_batch * r.micro_batches;
    if (EstimateMemory(model, bigger, layout, cluster).fits) {
      out.push_back(fmt::format(
          "gradient accumulation over {} micro-batches although micro_batch {} fits in memory: "
          "one larger micro-batch runs larger, more efficient GEMMs",
          r.micro_batches, bigger.micro_batch));
    }
  }
  if (r.step_time_s > 0 && r.exposed.total() / r.step_time_s > kExposedCommWarnFraction) {
    out.push_back(fmt::format(
        "exposed communication is {} of the step (above {}, scaling efficiency suffers): "
        "overlap it, or move the largest kind onto a faster fabric",
        Percent(r.exposed.total() / r.step_time_s), Percent(kExposedCommWarnFraction)));
  }
  if (!r.fits) {
    const auto worst = std::max_element(r.peak_memory_bytes.begin(), r.peak_memory_bytes.end());
    out.push_back(fmt::format("does not fit: stage {} peaks at {:.1f} GiB of {:.1f} GiB per GPU",
                              worst - r.peak_memory_bytes.begin(), Bytes(*worst).gib(),
                              Bytes(r.capacity_bytes).gib()));
  }
  return out;
}

}  // namespace parasim
