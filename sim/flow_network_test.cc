// The flow network alone, without the event loop: two flows on one link share it, a finished
// flow gives its share back, a stale completion is refused.
#include "sim/flow_network.h"

#include <doctest/doctest.h>

namespace parasim::sim {
namespace {

constexpr int64_t kSecond = 1'000'000'000'000;  // picoseconds

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
  FlowNetwork net(p, &link_bytes);
  FlowNetwork::Due due;
  net.Begin(fa, 10e9, 0, &due);  // alone: 10 GB at 10 GB/s = 1 s
  REQUIRE(due.size() == 1);
  CHECK(due[0] == std::pair<int64_t, TaskId>{kSecond, fa});
  due.clear();
  net.Begin(fb, 5e9, 0, &due);  // both at 5 GB/s: fb done at 1 s, fa at 2 s
  REQUIRE(due.size() == 2);
  CHECK(due[0] == std::pair<int64_t, TaskId>{2 * kSecond, fa});
  CHECK(due[1] == std::pair<int64_t, TaskId>{kSecond, fb});
  due.clear();
  CHECK_FALSE(net.Finish(fa, kSecond, kSecond, &due));  // the first completion is stale
  CHECK(net.Finish(fb, kSecond, kSecond, &due));
  // fa has 5 GB left and the whole link again: done at 1.5 s.
  REQUIRE(due.size() == 1);
  CHECK(due[0] == std::pair<int64_t, TaskId>{kSecond + kSecond / 2, fa});
  CHECK(net.active() == 1);
  due.clear();
  CHECK(net.Finish(fa, kSecond + kSecond / 2, kSecond + kSecond / 2, &due));
  CHECK(net.active() == 0);
  CHECK(link_bytes[link] == doctest::Approx(15e9));
}

}  // namespace
}  // namespace parasim::sim
