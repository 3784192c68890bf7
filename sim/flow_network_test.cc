// The flow network alone, without the event loop: two flows on one link share it, a finished
// flow gives its share back, and every move of a completion is numbered and listed.
#include "sim/flow_network.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "sim/maxmin.h"

namespace parasim::sim {
namespace {

constexpr int64_t kSecond = 1'000'000'000'000;  // picoseconds

// A flow's current completion and rate, from the network's state.
FlowNetwork::State StateOf(const FlowNetwork& net, TaskId t) {
  for (const FlowNetwork::State& s : net.States()) {
    if (s.task == t) return s;
  }
  FAIL("flow not active");
  return {};
}

TEST_CASE("two flows share a link max-min fairly; the survivor speeds up when one ends") {
  Program p;
  const uint32_t r = p.AddRank("r");
  const StreamId a = p.AddStream(r, "a"), b = p.AddStream(r, "b");
  const LinkId link = p.AddLink("link", Bandwidth::GBps(10));
  const RouteId route = p.AddRoute({link});
  const TaskId fa = p.AddFlow(a, 0, 0, p.Intern("fa"), route);
  const TaskId fb = p.AddFlow(b, 0, 0, p.Intern("fb"), route);
  p.Finalize();
  std::vector<double> link_bytes(p.num_links(), 0.0);
  uint64_t seq = 0;
  FlowNetwork net(p, &link_bytes, &seq);
  FlowNetwork::Due due;
  net.Begin(fa, 10e9, 0, &due);  // alone: 10 GB at 10 GB/s = 1 s, move 0
  REQUIRE(due.size() == 1);
  CHECK(due[0].at == kSecond);
  CHECK(due[0].seq == 0);
  CHECK(due[0].task == fa);
  due.clear();
  // Both at 5 GB/s: fa's completion moves later, to 2 s (move 1, listed for the replay to move
  // its queued event), then fb's is queued for 1 s (move 2).
  net.Begin(fb, 5e9, 0, &due);
  REQUIRE(due.size() == 2);
  CHECK(due[0].at == 2 * kSecond);
  CHECK(due[0].seq == 1);
  CHECK(due[0].task == fa);
  CHECK(due[1].at == kSecond);
  CHECK(due[1].seq == 2);
  CHECK(due[1].task == fb);
  CHECK(StateOf(net, fa).done.due == 2 * kSecond);
  CHECK(StateOf(net, fa).done.seq == 1);
  CHECK(StateOf(net, fa).rate == 5e9);
  due.clear();
  // fb finishes at 1 s. fa has 5 GB left and the whole link again: done at 1.5 s (move 3).
  net.Finish(fb, kSecond, &due);
  REQUIRE(due.size() == 1);
  CHECK(due[0].at == kSecond + kSecond / 2);
  CHECK(due[0].seq == 3);
  CHECK(due[0].task == fa);
  CHECK(net.active() == 1);
  due.clear();
  net.Finish(fa, kSecond + kSecond / 2, &due);
  CHECK(due.empty());
  CHECK(net.active() == 0);
  CHECK(seq == 4);
  CHECK(link_bytes[link] == doctest::Approx(15e9));
}

TEST_CASE("flows of one route share its slowest link; a flow of another route joins them") {
  // Three flows on route {fast, slow} take slow / 3 each, as the max-min solver gives them
  // (the same-route component skips the solver); a fourth on {slow} alone makes the component
  // two routes wide, solved again: all four at slow / 4.
  Program p;
  const uint32_t r = p.AddRank("r");
  std::vector<StreamId> s;
  for (int i = 0; i < 4; ++i) s.push_back(p.AddStream(r, "s" + std::to_string(i)));
  const LinkId fast = p.AddLink("fast", Bandwidth::GBps(30));
  const LinkId slow = p.AddLink("slow", Bandwidth::GBps(7));
  const RouteId both = p.AddRoute({fast, slow});
  const RouteId one = p.AddRoute({slow});
  std::vector<TaskId> f;
  for (int i = 0; i < 3; ++i) f.push_back(p.AddFlow(s[i], 0, 0, p.Intern("f"), both));
  f.push_back(p.AddFlow(s[3], 0, 0, p.Intern("g"), one));
  p.Finalize();
  std::vector<double> link_bytes(p.num_links(), 0.0);
  uint64_t seq = 0;
  FlowNetwork net(p, &link_bytes, &seq);
  FlowNetwork::Due due;
  for (int i = 0; i < 3; ++i) net.Begin(f[i], 7e9, 0, &due);
  // Each of the three at 7/3 GB/s, 7 GB in 3 s: the solver's answer.
  const std::vector<double> solver = MaxMinRates(
      {p.route_links(both), p.route_links(both), p.route_links(both)}, p.link_capacities());
  CHECK(solver[0] == 7e9 / 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(StateOf(net, f[i]).rate == solver[0]);
    CHECK(StateOf(net, f[i]).done.due == 3 * kSecond);
  }
  // Listed: every move, the first flow's to 1, 2 and 3 s, the second's to 2 and 3 s, the
  // third's to 3 s.
  REQUIRE(due.size() == 6);
  CHECK(due.back().at == 3 * kSecond);
  CHECK(due.back().task == f[2]);
  due.clear();
  net.Begin(f[3], 7e9, 0, &due);  // four on `slow`: 7/4 GB/s each, 4 s: all four move
  REQUIRE(due.size() == 4);
  for (const FlowNetwork::Completed& c : due) CHECK(c.at == 4 * kSecond);
  for (TaskId t : f) CHECK(StateOf(net, t).done.due == 4 * kSecond);
  CHECK(net.active() == 4);
}

TEST_CASE("every re-share gives the max-min solver's rates, bit for bit, whatever its shape") {
  // Random flows begin and end on a few links of unequal capacities, over routes of one to
  // three links, several flows per route: components of one route, flows of routes apart once
  // the flow between them ends, stars and chains. After each change, the rates of the flows
  // connected to it are the solver's for that component, in the network's order.
  for (uint32_t trial = 0; trial < 40; ++trial) {
    std::mt19937 rng(trial);
    Program p;
    const uint32_t r = p.AddRank("r");
    const StreamId st = p.AddStream(r, "s");
    std::vector<LinkId> links;
    for (int l = 0; l < 6; ++l) {
      links.push_back(p.AddLink("l" + std::to_string(l), Bandwidth::GBps(5 + 7 * (l % 3))));
    }
    std::vector<RouteId> routes;
    for (int k = 0; k < 8; ++k) {
      std::vector<LinkId> on(links);
      std::shuffle(on.begin(), on.end(), rng);
      on.resize(1 + rng() % 3);
      routes.push_back(p.AddRoute(on));
    }
    std::vector<TaskId> tasks;
    for (int i = 0; i < 60; ++i) {
      tasks.push_back(p.AddFlow(st, 0, 0, p.Intern("f"), routes[rng() % routes.size()]));
    }
    p.Finalize();
    std::vector<double> link_bytes(p.num_links(), 0.0);
    uint64_t seq = 0;
    FlowNetwork net(p, &link_bytes, &seq);
    FlowNetwork::Due due;
    int64_t now = 0;
    size_t next = 0;
    auto check = [&](RouteId changed) {
      // The component around the changed route's links, found apart from the network.
      const std::vector<FlowNetwork::State> states = net.States();
      std::vector<char> in(states.size(), 0), link_in(p.num_links(), 0);
      for (LinkId l : p.route_links(changed)) link_in[l] = 1;
      for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < states.size(); ++i) {
          if (in[i]) continue;
          bool touches = false;
          for (LinkId l : p.route_links(p.route(states[i].task))) touches |= link_in[l] != 0;
          if (!touches) continue;
          in[i] = 1;
          grew = true;
          for (LinkId l : p.route_links(p.route(states[i].task))) link_in[l] = 1;
        }
      }
      std::vector<std::span<const uint32_t>> component;
      std::vector<double> rates;
      for (size_t i = 0; i < states.size(); ++i) {
        if (!in[i]) continue;
        component.push_back(p.route_links(p.route(states[i].task)));
        rates.push_back(states[i].rate);
      }
      if (component.empty()) return;
      CHECK(MaxMinRates(component, p.link_capacities()) == rates);
    };
    while (next < tasks.size() || net.active() > 0) {
      const std::vector<FlowNetwork::State> states = net.States();
      const auto first =
          std::min_element(states.begin(), states.end(),
                           [](const FlowNetwork::State& a, const FlowNetwork::State& b) {
                             return a.done.due < b.done.due;
                           });
      if (next < tasks.size() && (states.empty() || rng() % 2 == 0)) {
        now += static_cast<int64_t>(rng() % 1000) * 1'000'000;  // up to 1 ms later
        if (first != states.end()) now = std::min(now, first->done.due);
        net.Begin(tasks[next], 1e6 * (1 + rng() % 50), now, &due);
        check(p.route(tasks[next]));
        ++next;
      } else {
        now = first->done.due;
        net.Finish(first->task, now, &due);
        check(p.route(first->task));
      }
    }
  }
}

}  // namespace
}  // namespace parasim::sim
