#include "sim/program.h"

#include <fmt/core.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>

namespace parasim::sim {

uint32_t TableCost::AddCompute(Duration d, double contended_slowdown) {
  compute_.push_back(d);
  flows_.push_back(FlowCost{});
  slowdown_.push_back(contended_slowdown);
  return static_cast<uint32_t>(compute_.size() - 1);
}

uint32_t TableCost::AddFlow(FlowCost f) {
  compute_.push_back(Duration::Zero());
  flows_.push_back(f);
  slowdown_.push_back(1.0);
  return static_cast<uint32_t>(flows_.size() - 1);
}

uint32_t Program::AddRank(std::string name) {
  rank_names_.push_back(std::move(name));
  return static_cast<uint32_t>(rank_names_.size() - 1);
}

StreamId Program::AddStream(uint32_t rank, std::string name, StreamRole role) {
  stream_rank_.push_back(rank);
  stream_role_.push_back(static_cast<uint8_t>(role));
  stream_names_.push_back(std::move(name));
  stream_tasks_.push_back(0);
  return static_cast<StreamId>(stream_rank_.size() - 1);
}

LinkId Program::AddLink(std::string name, Bandwidth capacity) {
  link_names_.push_back(std::move(name));
  link_capacity_.push_back(capacity.bytes_per_second());
  return static_cast<LinkId>(link_capacity_.size() - 1);
}

uint32_t Program::Intern(std::string_view label) {
  auto it = label_index_.find(std::string(label));
  if (it != label_index_.end()) return it->second;
  labels_.emplace_back(label);
  uint32_t id = static_cast<uint32_t>(labels_.size() - 1);
  label_index_.emplace(std::string(label), id);
  return id;
}

RouteId Program::AddRoute(std::initializer_list<LinkId> links) {
  return AddRoute(std::span<const LinkId>(links.begin(), links.size()));
}

RouteId Program::AddRoute(std::span<const LinkId> links) {
  // The same links give the same route (a planner's every micro-batch crosses the same ones):
  // routes are found by a hash of their links, and the candidates' links compared.
  const uint64_t hash = WholeNumbersHash()(links);
  const RouteId id = static_cast<RouteId>(route_offset_.size() - 1);  // if it is new
  auto [head, inserted] = route_index_.Emplace(hash, id);
  if (!inserted) {
    for (RouteId r = *head;; r = route_next_[r]) {
      const std::span<const LinkId> have = route_links(r);
      if (std::equal(have.begin(), have.end(), links.begin(), links.end())) return r;
      if (route_next_[r] == kNone) {
        route_next_[r] = id;  // a new route with the same hash, chained after the last one
        break;
      }
    }
  }
  route_links_.insert(route_links_.end(), links.begin(), links.end());
  route_offset_.push_back(static_cast<uint32_t>(route_links_.size()));
  route_next_.push_back(kNone);
  return id;
}

void Program::AddStreamToTask(TaskId t, StreamId stream) {
  extra_streams_.emplace_back(t, stream);
  ++stream_tasks_[stream];
  Reopen();
}

void Program::Thaw() {
  // The pair list again from the compressed rows, for Finalize to freeze with what is added.
  for (TaskId t = 0; t + 1 < succ_offset_.size(); ++t) {
    for (TaskId s : successors(t)) edges_.emplace_back(t, s);
  }
  succ_.clear();
  succ_offset_.clear();
  finalized_ = false;
}

void Program::Reserve(size_t tasks, size_t edges, size_t memory_events) {
  tasks_.reserve(tasks);
  category_.reserve(tasks);
  edges_.reserve(edges);
  memory_.reserve(memory_events);
}

void Program::Finalize() {
  if (finalized_) return;
  const size_t n = tasks_.size();
  succ_offset_.assign(n + 1, 0);
  deps_in_task_order_ = true;
  for (const auto& [a, b] : edges_) {
    ++succ_offset_[a + 1];
    deps_in_task_order_ &= a < b;
  }
  for (size_t i = 0; i < n; ++i) succ_offset_[i + 1] += succ_offset_[i];
  succ_.resize(edges_.size());
  std::vector<uint32_t> fill(succ_offset_.begin(), succ_offset_.end() - 1);
  for (const auto& [a, b] : edges_) succ_[fill[a]++] = b;
  edges_.clear();
  edges_.shrink_to_fit();
  auto by_task = [](const MemoryEvent& x, const MemoryEvent& y) { return x.task < y.task; };
  if (!std::is_sorted(memory_.begin(), memory_.end(), by_task)) {
    std::stable_sort(memory_.begin(), memory_.end(), by_task);
  }
  if (!std::is_sorted(extra_streams_.begin(), extra_streams_.end())) {
    std::sort(extra_streams_.begin(), extra_streams_.end());
  }
  finalized_ = true;
}

Status Program::Validate() const {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Graph g(num_tasks());
  auto add = [&](TaskId a, TaskId b) {
    if (a >= num_tasks() || b >= num_tasks()) return false;
    boost::add_edge(a, b, g);
    return true;
  };
  if (finalized_) {
    for (TaskId t = 0; t < num_tasks(); ++t) {
      for (TaskId s : successors(t)) add(t, s);
    }
  } else {
    for (const auto& [a, b] : edges_) {
      if (!add(a, b)) {
        return InvalidArgument(
            fmt::format("dependency {} -> {} names a task that does not exist", a, b));
      }
    }
  }
  std::vector<Graph::vertex_descriptor> order;
  try {
    boost::topological_sort(g, std::back_inserter(order));
  } catch (const boost::not_a_dag&) {
    // Find one task on a cycle: the first that Kahn's algorithm cannot release.
    std::vector<int> indeg(num_tasks(), 0);
    for (auto [e, end] = boost::edges(g); e != end; ++e) ++indeg[boost::target(*e, g)];
    std::vector<TaskId> ready;
    for (TaskId t = 0; t < num_tasks(); ++t) {
      if (indeg[t] == 0) ready.push_back(t);
    }
    while (!ready.empty()) {
      TaskId t = ready.back();
      ready.pop_back();
      for (auto [e, end] = boost::out_edges(t, g); e != end; ++e) {
        if (--indeg[boost::target(*e, g)] == 0) ready.push_back(boost::target(*e, g));
      }
    }
    for (TaskId t = 0; t < num_tasks(); ++t) {
      if (indeg[t] > 0) {
        return InvalidArgument(fmt::format(
            "the program's dependencies form a cycle through task {} ('{}' on {}/{})", t,
            label_text(label(t)), rank_names_[stream_rank_[stream(t)]], stream_names_[stream(t)]));
      }
    }
    return InvalidArgument("the program's dependencies form a cycle");
  }
  return Status::Ok();
}

size_t Program::MemoryBytes() const {
  auto cap = [](const auto& v) { return StorageBytes(v); };
  return cap(tasks_) + cap(category_) + cap(edges_) + cap(succ_offset_) + cap(succ_) +
         cap(memory_) + cap(route_offset_) + cap(route_links_) + cap(extra_streams_) +
         cap(stream_tasks_) + route_index_.storage_bytes() + cap(route_next_);
}

}  // namespace parasim::sim
