#include "strategies/placement.h"

#include <algorithm>

namespace parasim {
namespace {

constexpr int kTp = 0, kCp = 1, kDp = 2, kPp = 3;

int DimIndex(RankDim d) {
  switch (d) {
    case RankDim::kTp:
      return kTp;
    case RankDim::kCp:
      return kCp;
    case RankDim::kDp:
      return kDp;
    case RankDim::kPp:
      return kPp;
    case RankDim::kEp:
      return -1;  // carved out of dp x cp, not a dimension of the grid
  }
  return -1;
}

}  // namespace

Placement::Placement(const Layout& layout, const ClusterSpec& cluster)
    : layout_(layout), domain_gpus_(std::max(1, cluster.domain())), pod_gpus_(cluster.pod_gpus) {
  size_ = {layout.tp, layout.cp, layout.dp, layout.pp};
  std::vector<int> order;
  for (RankDim dim : layout.order) {
    int d = DimIndex(dim);
    if (d >= 0 && std::find(order.begin(), order.end(), d) == order.end()) order.push_back(d);
  }
  // Dimensions the order leaves out go outermost, in the default order.
  for (int d : {kTp, kCp, kDp, kPp}) {
    if (std::find(order.begin(), order.end(), d) == order.end()) order.push_back(d);
  }
  int64_t stride = 1;
  for (int d : order) {
    stride_[d] = stride;
    stride *= size_[d];
  }
}

int64_t Placement::Rank(const RankCoords& c) const {
  return c.tp * stride_[kTp] + c.cp * stride_[kCp] + c.dp * stride_[kDp] + c.pp * stride_[kPp];
}

RankCoords Placement::Coords(int64_t rank) const {
  RankCoords c;
  c.tp = static_cast<int>(rank / stride_[kTp] % size_[kTp]);
  c.cp = static_cast<int>(rank / stride_[kCp] % size_[kCp]);
  c.dp = rank / stride_[kDp] % size_[kDp];
  c.pp = static_cast<int>(rank / stride_[kPp] % size_[kPp]);
  return c;
}

std::vector<int64_t> Placement::DataMembers(int64_t rank) const {
  RankCoords base = Coords(rank);
  base.cp = 0;
  base.dp = 0;
  // Enumerate the dp x cp grid with the smaller-stride dimension innermost.
  const bool cp_inner = stride_[kCp] < stride_[kDp];
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(size_[kCp] * size_[kDp]));
  const int64_t outer = cp_inner ? size_[kDp] : size_[kCp];
  const int64_t inner = cp_inner ? size_[kCp] : size_[kDp];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      RankCoords c = base;
      c.cp = static_cast<int>(cp_inner ? i : o);
      c.dp = cp_inner ? o : i;
      out.push_back(Rank(c));
    }
  }
  return out;
}

std::vector<int64_t> Placement::Members(GroupKind kind, int64_t rank) const {
  std::vector<int64_t> out;
  RankCoords c = Coords(rank);
  switch (kind) {
    case GroupKind::kTp:
      for (int i = 0; i < layout_.tp; ++i) out.push_back(Rank({i, c.cp, c.dp, c.pp}));
      break;
    case GroupKind::kCp:
      for (int i = 0; i < layout_.cp; ++i) out.push_back(Rank({c.tp, i, c.dp, c.pp}));
      break;
    case GroupKind::kPp:
      for (int i = 0; i < layout_.pp; ++i) out.push_back(Rank({c.tp, c.cp, c.dp, i}));
      break;
    case GroupKind::kDp:
      out = DataMembers(rank);
      break;
    case GroupKind::kEtp:
    case GroupKind::kEp: {
      const size_t ep = static_cast<size_t>(std::max(1, layout_.ep));
      if (layout_.expert_tp() != layout_.tp) {
        // MoE parallel folding: an expert-TP group is `etp` consecutive places of the stage's
        // expert order, an EP group `ep` places `etp` apart.
        size_t pos = 0;
        const std::vector<int64_t> all = ExpertOrder(rank, &pos);
        const size_t etp = static_cast<size_t>(layout_.expert_tp());
        const bool tp_group = kind == GroupKind::kEtp;
        const size_t stride = tp_group ? 1 : etp, count = tp_group ? etp : ep;
        const size_t first = tp_group ? pos / etp * etp : pos / (etp * ep) * (etp * ep) + pos % etp;
        for (size_t i = 0; i < count; ++i) out.push_back(all[first + i * stride]);
      } else if (kind == GroupKind::kEtp) {
        out = Members(GroupKind::kTp, rank);
      } else {
        std::vector<int64_t> data = DataMembers(rank);
        auto it = std::find(data.begin(), data.end(), rank);
        const size_t pos = static_cast<size_t>(it - data.begin());
        const size_t first = pos / ep * ep;
        for (size_t i = first; i < first + ep && i < data.size(); ++i) out.push_back(data[i]);
      }
      break;
    }
  }
  return out;
}

std::vector<int64_t> Placement::ExpertOrder(int64_t rank, size_t* pos) const {
  const std::vector<int64_t> data = DataMembers(rank);
  const RankCoords c = Coords(rank);
  std::vector<int64_t> out;
  out.reserve(data.size() * static_cast<size_t>(layout_.tp));
  for (size_t i = 0; i < data.size(); ++i) {
    RankCoords x = Coords(data[i]);
    if (data[i] == rank) *pos = i * static_cast<size_t>(layout_.tp) + static_cast<size_t>(c.tp);
    for (int t = 0; t < layout_.tp; ++t) {
      x.tp = t;
      out.push_back(Rank(x));
    }
  }
  return out;
}

std::vector<int64_t> Placement::ExpertDataMembers(int64_t rank) const {
  if (layout_.expert_tp() != layout_.tp) {
    size_t pos = 0;
    const std::vector<int64_t> all = ExpertOrder(rank, &pos);
    const size_t run = static_cast<size_t>(layout_.expert_tp()) * std::max(1, layout_.ep);
    std::vector<int64_t> out;
    for (size_t i = pos % run; i < all.size(); i += run) out.push_back(all[i]);
    return out;
  }
  std::vector<int64_t> data = DataMembers(rank);
  auto it = std::find(data.begin(), data.end(), rank);
  const size_t pos = static_cast<size_t>(it - data.begin());
  const size_t ep = static_cast<size_t>(std::max(1, layout_.ep));
  std::vector<int64_t> out;
  for (size_t i = pos % ep; i < data.size(); i += ep) out.push_back(data[i]);
  return out;
}

GroupPlacement Placement::Shape(const std::vector<int64_t>& members) const {
  GroupPlacement g;
  g.size = static_cast<int64_t>(members.size());
  std::vector<int64_t> nodes;
  nodes.reserve(members.size());
  int64_t lo = members.empty() ? 0 : members.front(), hi = lo;
  for (int64_t r : members) {
    nodes.push_back(Node(r));
    lo = std::min(lo, r);
    hi = std::max(hi, r);
  }
  // Members(), DataMembers() and ExpertDataMembers() list ranks in ascending order (each
  // dimension's stride is at least the span of the ones inside it), so their nodes come sorted;
  // a group of 2,048 ranks was sorted for each of a sweep's ~30,000 screened layouts.
  if (!std::is_sorted(nodes.begin(), nodes.end())) std::sort(nodes.begin(), nodes.end());
  for (size_t i = 0, j = 0; i < nodes.size(); i = j) {
    while (j < nodes.size() && nodes[j] == nodes[i]) ++j;
    g.per_node = std::max<int64_t>(g.per_node, static_cast<int64_t>(j - i));
  }
  g.beyond_pod = pod_gpus_ > 0 && lo / pod_gpus_ != hi / pod_gpus_;
  return g;
}

bool Placement::CrossesNodes(GroupKind kind) const {
  GroupPlacement g = Group(kind);
  return g.size > g.per_node;
}

bool Placement::StageBoundaryInterNode(int s) const {
  return Node(Rank({0, 0, 0, s})) != Node(Rank({0, 0, 0, s + 1}));
}

}  // namespace parasim
