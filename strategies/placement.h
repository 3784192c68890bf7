// Rank placement: where each parallel group's members sit on the cluster.
//
// Ranks are numbered by the layout's `order`, innermost first (default [tp, cp, ep, dp, pp]):
// TP neighbours are consecutive ranks, so a TP group of 8 fills one 8-GPU node. EP is carved
// out of the data-parallel ranks (Megatron's expert groups), so it is not a dimension of its own.
//
//   Placement pl(layout, cluster);
//   GroupPlacement tp = pl.Group(GroupKind::kTp);   // {size 8, per_node 8}
//   bool crosses = pl.CrossesNodes(GroupKind::kTp);
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/spec.h"
#include "models/op.h"
#include "strategies/layout.h"

namespace parasim {

// Coordinates of a rank in the layout's grid.
struct RankCoords {
  int tp = 0;
  int cp = 0;
  int64_t dp = 0;
  int pp = 0;
};

class Placement {
 public:
  Placement(const Layout& layout, const ClusterSpec& cluster);

  int64_t Rank(const RankCoords& c) const;
  RankCoords Coords(int64_t rank) const;
  // The NVLink domain of a rank (a node unless cluster.nvlink_domain spans several): ranks of
  // one domain talk over the intra-node fabric.
  int64_t Node(int64_t rank) const { return rank / domain_gpus_; }

  // Members (global ranks) of the group of `kind` that contains `rank`. kDp is the gradient
  // group of dense parameters (dp x cp ranks); kEp the expert group, the first `ep` of those;
  // kEtp the experts' TP group, the TP group itself. Where etp differs from tp (MoE parallel
  // folding), the stage's ranks in ExpertOrder split into etp x ep x edp, etp innermost.
  std::vector<int64_t> Members(GroupKind kind, int64_t rank = 0) const;
  // Gradient group of expert parameters: the dp x cp ranks holding the same experts.
  std::vector<int64_t> ExpertDataMembers(int64_t rank = 0) const;

  // Shape of the group for the cost model: size, most members on one node, pod crossing.
  GroupPlacement Group(GroupKind kind) const { return Shape(Members(kind)); }
  GroupPlacement ExpertDataGroup() const { return Shape(ExpertDataMembers()); }
  GroupPlacement Shape(const std::vector<int64_t>& members) const;
  bool CrossesNodes(GroupKind kind) const;
  // Whether pipeline stages s and s+1 (same tp/cp/dp coordinates) sit on different nodes.
  bool StageBoundaryInterNode(int s) const;

 private:
  Layout layout_;
  int domain_gpus_;  // GPUs per NVLink domain (ClusterSpec::domain(), a node by default)
  int64_t pod_gpus_;
  // Stride of each dimension: tp, cp, dp, pp.
  std::array<int64_t, 4> stride_{};
  std::array<int64_t, 4> size_{};
  // The dp x cp members of the group containing `rank`, ordered by increasing stride.
  std::vector<int64_t> DataMembers(int64_t rank) const;
  // The tp x cp x dp ranks of `rank`'s stage, the TP coordinate innermost and then the
  // DataMembers order (Megatron-Core's expert rank order, tp-ep-dp), and `rank`'s place there.
  std::vector<int64_t> ExpertOrder(int64_t rank, size_t* pos) const;
};

}  // namespace parasim
