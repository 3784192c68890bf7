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
    case GroupKind::kEp: {
      std::vector<int64_t> data = DataMembers(rank);
      auto it = std::find(data.begin(), data.end(), rank);
      const size_t pos = static_cast<size_t>(it - data.begin());
      const size_t ep = static_cast<size_t>(std::max(1, layout_.ep));
      const size_t first = pos / ep * ep;
      for (size_t i = first; i < first + ep && i < data.size(); ++i) out.push_back(data[i]);
      break;
    }
  }
  return out;
}

std::vector<int64_t> Placement::ExpertDataMembers(int64_t rank) const {
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
