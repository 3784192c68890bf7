// The block that orders a layer's ops (models/op.h) in a Boost.Graph, in forward order.
//
//   const Op& op = block.op(i);                                 // in forward order
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <string>
#include <vector>

#include "models/op.h"

namespace parasim {

using OpGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op>;

struct Block {
  std::string name;
  OpGraph graph;
  std::vector<OpGraph::vertex_descriptor> order;  // topological order (forward execution)
  const Op& op(size_t i) const { return graph[order[i]]; }
  size_t size() const { return order.size(); }
};

}  // namespace parasim
