#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace parasim::sim {

FlowNetwork::FlowNetwork(const Program& p, std::vector<double>* link_bytes, uint64_t* seq)
    : p_(p),
      link_bytes_(link_bytes),
      seq_(seq),
      slot_(p.num_tasks(), -1),
      link_marked_(p.num_links(), 0),
      link_flows_(p.num_links()),
      route_flows_(p.num_routes(), 0) {}

void FlowNetwork::Mark(std::span<const uint32_t> links) {
  for (LinkId l : links) {
    if (!link_marked_[l]) {
      link_marked_[l] = 1;
      marked_links_.push_back(l);
    }
  }
}

void FlowNetwork::FindComponent(RouteId route) {
  // The active flows connected to `route` through shared links. The component is solved in the
  // order of the flows' slots, whatever the order of discovery.
  component_.clear();
  apart_ = false;
  // Most flows start and end alone on their links, or beside flows of the same route only:
  // when every flow on the route's links runs on this very route, those flows (the ones on its
  // first link) are the component, without the search.
  bool others = false;
  const std::span<const LinkId> links = p_.route_links(route);
  for (LinkId l : links) others |= link_flows_[l].size() != route_flows_[route];
  if (!others) {
    if (!links.empty()) {
      for (TaskId t : link_flows_[links[0]]) component_.push_back(static_cast<uint32_t>(slot_[t]));
    }
    if (component_.size() > 1) std::sort(component_.begin(), component_.end());
    apart_ = true;  // one route, alone
    return;
  }
  if (CollectStar(route)) {
    // Without a flow of the route itself (one of its flows just ended), the routes beside it
    // no longer touch each other: each is a component of its own route's flows.
    apart_ = route_flows_[route] == 0;
    return;
  }
  // Else a breadth-first search over links, each marked link's flows marking theirs.
  marked_links_.clear();
  Mark(p_.route_links(route));
  for (size_t k = 0; k < marked_links_.size(); ++k) {
    for (TaskId t : link_flows_[marked_links_[k]]) {
      Active& f = active_[slot_[t]];
      if (f.in_component) continue;
      f.in_component = true;
      component_.push_back(static_cast<uint32_t>(slot_[t]));
      Mark(LinksOf(f));
    }
  }
  for (LinkId l : marked_links_) link_marked_[l] = 0;
  std::sort(component_.begin(), component_.end());
}

bool FlowNetwork::CollectStar(RouteId route) {
  // When each flow of another route on the route's links shares its own links with flows of
  // its own route and of `route` only (a gradient bucket on its rank's ports beside the
  // pipeline send that starts or ends on one of them), the flows on the route's links are the
  // component: no link of theirs reaches further. They are collected as they are checked, and
  // let go again when one fails the check.
  const std::span<const LinkId> links = p_.route_links(route);
  const size_t own = route_flows_[route];
  for (LinkId l : links) {
    for (TaskId t : link_flows_[l]) {
      const uint32_t i = static_cast<uint32_t>(slot_[t]);
      Active& g = active_[i];
      if (g.in_component) continue;  // a flow on more than one of the route's links
      if (g.route != route) {
        for (LinkId m : LinksOf(g)) {
          const bool shared = std::find(links.begin(), links.end(), m) != links.end();
          if (link_flows_[m].size() != route_flows_[g.route] + (shared ? own : 0)) {
            for (uint32_t k : component_) active_[k].in_component = false;
            component_.clear();
            return false;
          }
        }
      }
      g.in_component = true;
      component_.push_back(i);
    }
  }
  if (component_.size() > 1) std::sort(component_.begin(), component_.end());
  return true;
}

void FlowNetwork::Reshare(RouteId route, int64_t now, Due* due) {
  FindComponent(route);
  for (uint32_t i : component_) {
    Active& f = active_[i];
    f.in_component = false;
    // Bring progress up to `now` at the old rate.
    const double dt = Duration::Picoseconds(now - f.updated_at).seconds();
    f.remaining -= std::min(f.remaining, f.rate * dt);
    f.updated_at = now;
  }
  if (component_.empty()) return;
  if (apart_) {
    // Routes each alone on their links: the solver would give a route's n flows its slowest
    // link over n, whatever order it freezes the routes in (a route's flows are often
    // neighbours in the component: its share is worked out once for them).
    RouteId last = kNone;
    double share = 0;
    for (uint32_t i : component_) {
      Active& f = active_[i];
      if (f.route != last) {
        last = f.route;
        share = RouteShare(last, static_cast<double>(route_flows_[last]));
      }
      SetRate(f, share, now, due);
    }
    return;
  }
  Solve();
  for (size_t k = 0; k < component_.size(); ++k)
    SetRate(active_[component_[k]], rates_[k], now, due);
}

void FlowNetwork::Solve() {
  const size_t n = component_.size();
  RouteKey key{~uint64_t{0}, ~uint64_t{0}};
  if (n <= kMemoFlows) {
    for (size_t k = 0; k < n; ++k) key.Set(k, active_[component_[k]].route);
    if (const auto* known = solved_.Find(key)) {
      rates_.assign(known->begin(), known->begin() + n);
      return;
    }
  }
  flow_links_.clear();
  for (uint32_t i : component_) flow_links_.push_back(LinksOf(active_[i]));
  solver_.Solve(flow_links_, p_.link_capacities(), &rates_);
  if (n <= kMemoFlows) {
    std::array<double, kMemoFlows> rates{};
    std::copy(rates_.begin(), rates_.end(), rates.begin());
    solved_.Emplace(key, rates);
  }
}

double FlowNetwork::RouteShare(RouteId route, double n) const {
  // The first link with the least share, capacity / n, freezes all n flows at once in the
  // solver: each gets its route's slowest link over n.
  double share = std::numeric_limits<double>::infinity();
  for (LinkId l : p_.route_links(route)) share = std::min(share, p_.link_capacity(l) / n);
  return share;
}

[[gnu::always_inline]] inline void FlowNetwork::SetRate(Active& f, double rate, int64_t now,
                                                        Due* due) {
  f.rate = rate;
  double secs = f.rate > 0 ? f.remaining / f.rate : std::numeric_limits<double>::infinity();
  // Past the longest replay the completion is held just beyond it (the replay stops there):
  // now is within it, so the sum cannot wrap.
  int64_t at = secs > kMaxReplaySeconds ? now + kMaxReplayPs + 1
                                        : now + Duration::Seconds(secs).picoseconds();
  if (at == f.done.due) return;  // unchanged: the queued completion stands
  f.done = {at, static_cast<uint32_t>((*seq_)++)};
  due->push_back({at, f.done.seq, f.task});
}

void FlowNetwork::Begin(TaskId t, double bytes, int64_t now, Due* due) {
  slot_[t] = static_cast<int32_t>(active_.size());
  const RouteId route = p_.route(t);
  active_.push_back(Active{t, route, bytes, 0.0, now, Completion{}, false});
  // Every byte of the flow crosses each link of its route: credited now, once, rather than
  // piece by piece at each re-share.
  bool alone = true;
  const std::span<const LinkId> links = p_.route_links(route);
  for (LinkId l : links) {
    Credit(l, bytes);
    alone &= link_flows_[l].empty();
    link_flows_[l].push_back(t);
  }
  ++route_flows_[route];
  if (alone) {  // most flows when they start: the component is this flow, without a search
    SetRate(active_.back(), RouteShare(route, 1.0), now, due);
    return;
  }
  Reshare(route, now, due);
}

void FlowNetwork::Finish(TaskId t, int64_t now, Due* due) {
  const int32_t i = slot_[t];
  Active& f = active_[i];
  const RouteId route = f.route;
  bool left = false;  // whether any flow is left on its links
  for (LinkId l : LinksOf(f)) {
    std::vector<TaskId>& on = link_flows_[l];
    *std::find(on.begin(), on.end(), t) = on.back();
    on.pop_back();
    left |= !on.empty();
  }
  --route_flows_[route];
  slot_[active_.back().task] = i;
  slot_[t] = -1;
  active_[i] = active_.back();
  active_.pop_back();
  if (left) Reshare(route, now, due);  // the flows left on its links share what it frees
}

std::vector<FlowNetwork::State> FlowNetwork::States() const {
  std::vector<State> out;
  out.reserve(active_.size());
  for (const Active& f : active_)
    out.push_back({f.task, f.remaining, f.rate, f.updated_at, f.done});
  return out;
}

size_t FlowNetwork::state_bytes() const {
  size_t bytes = StorageBytes(slot_);
  for (const auto& on : link_flows_) bytes += sizeof(on) + on.capacity() * sizeof(TaskId);
  bytes += route_flows_.capacity() * sizeof(uint32_t);
  bytes += solved_.storage_bytes();
  return bytes;
}

}  // namespace parasim::sim
