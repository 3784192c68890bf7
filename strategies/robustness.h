// How far a sweep's answer holds: its leaders replayed again with one of the cost model's least
// certain parameters swung at a time, by as much as the measurements behind it spread (the
// fitted factors of the validation files, the recorded kernels of tools/gpu_check). A planner
// then knows whether #1 wins whatever those parameters turn out to be on the team's own
// cluster and software, or only if, say, its inter-node fabric runs as rated.
//
//   StatusOr<Robustness> r = SweepRobustness(scenario, outcome, RobustnessOptions::Jobs(8));
//   r->held       // swings under which #1 stays first, or within kRankTie of the first
//   r->swings[k]  // which leader comes first under swing k, and by how much
//
// The swings change rates alone, never memory: a leader that fits still fits. Only the leaders
// (the sweep's `top`) are replayed again: a layout ranked below them that a swing would promote
// is not seen.
#pragma once

#include <string>
#include <vector>

#include "hardware/spec.h"
#include "sim/status.h"
#include "strategies/plan.h"
#include "strategies/step.h"
#include "strategies/sweep.h"

namespace parasim {

// The parameters swung, each a family of the cost model's rates.
enum class SwingKind {
  kGemm,       // GEMM efficiency (the shape curve's ceiling, FP8's, measured shapes)
  kAttention,  // attention kernels' efficiencies, fused and materialised
  kMemory,     // HBM streaming efficiency and the element-wise kernels' SM rates
  kIntra,      // the scale-up fabric's (NVLink's) achieved fraction of its bandwidth
  kInter,      // the scale-out fabric's (InfiniBand, RoCE) achieved fraction
  kHost,       // per-kernel fixed costs: the launch gap and the host's issue time
  // Every kernel rate of one GPU type together (its sustained factor): a co-design sweep's
  // clusters of that GPU alone, where the others stay.
  kKernels,
};
inline constexpr int kNumSwingKinds = 7;

struct Swing {
  SwingKind kind = SwingKind::kGemm;
  double factor = 1;
  std::string gpu;  // a catalog GPU id: the clusters of that GPU alone; "" = every cluster
};

// The twelve swings `sweep --robust` replays, each shared kind down and up (docs/MODEL.md, "How
// far a sweep's answer holds", gives every factor's source).
const std::vector<Swing>& DefaultSwings();
// Where the leaders run on more than one GPU type (a co-design sweep), each type's kernels
// alone, down and up: the two swings for `gpu`.
std::vector<Swing> GpuSwings(const std::string& gpu);
// "GEMMs", "attention", "memory-bound kernels", "scale-up fabric", "scale-out fabric", "per-kernel
// overheads", "kernels"; and the JSON name ("gemm", "attention", "memory", "intra", "inter",
// "host", "kernels").
std::string_view SwingName(SwingKind k);
std::string_view SwingKey(SwingKind k);
// The kind a JSON key names (SwingKey's inverse); kernels where none does.
SwingKind SwingKindOf(std::string_view key);
// The kind's name, or for one GPU type's swing "b200 kernels"; with its factor, "GEMMs x0.90".
std::string SwingLabel(const Swing& s);
std::string SwingText(const Swing& s);
// How a team pins that parameter on its own cluster ("parasim calibrate --only attention").
std::string_view SwingMeasure(SwingKind k);

// `cluster` with the swing applied: each efficiency times the factor, capped where a fraction of
// a peak must stay (1, or 0.95 for attention as the cost model caps it); attention efficiencies
// the catalog leaves to the GEMM efficiency are first made explicit, so that only the attention
// swing moves them. A swing for one GPU type leaves a cluster of another as it is. `applied`, when
// given, receives what changed ("0.813 -> 0.732").
ClusterSpec Swung(const ClusterSpec& cluster, const Swing& swing, std::string* applied = nullptr);

// The swings that apply to layouts on `clusters`: `swings` without the scale-out fabric's where
// every cluster is one scale-up domain (a node, or an NVL72 rack), and GpuSwings of each GPU
// type where the clusters hold more than one.
std::vector<Swing> SwingsFor(const std::vector<const ClusterSpec*>& clusters,
                             const std::vector<Swing>& swings);
// A scenario's layout replayed on its cluster under `swing` (no critical path).
StatusOr<StepReport> SwungStep(const Scenario& s, const Swing& swing);

struct SwingOutcome {
  Swing swing;
  std::string applied;  // on the first leader's cluster the swing moves
  size_t first = 0;     // index into the leaders of the one first under the swing
  double behind = 0;    // how much #1 costs over that one under the swing (0 when #1 is first)
  bool holds = true;    // #1 first, or within kRankTie of the first
  std::vector<double> step_s;  // each leader's step under the swing
};

struct Robustness {
  size_t leaders = 0;
  std::vector<size_t> ranked;  // each leader's index into the sweep's ranking; [0] is #1
  size_t top = 0;  // how many of them are the ranking's first (the rest: clusters' best)
  std::vector<SwingOutcome> swings;
  int held = 0;
};

struct RobustnessOptions {
  int jobs = 1;
  std::vector<Swing> swings = DefaultSwings();
  static RobustnessOptions Jobs(int jobs) {
    RobustnessOptions o;
    o.jobs = jobs;
    return o;
  }
};

// Replays the first `top` ranked layouts of `outcome` (the sweep of `base`), and in a co-design
// sweep each cluster's best, under each of SwingsFor(their clusters, options.swings), and ranks
// them again by the sweep's objective. Nothing for the memory objective, which the swings do not
// move, or fewer than two leaders.
StatusOr<Robustness> SweepRobustness(const Scenario& base, const SweepOutcome& outcome,
                                     const RobustnessOptions& options);

}  // namespace parasim
