#include "sim/timeline.h"

#include <doctest/doctest.h>

namespace parasim::sim {
namespace {

TEST_CASE("a link's utilisation is its bytes over what its capacity moves in the makespan") {
  Program p;
  const LinkId nic = p.AddLink("nic", Bandwidth::GBps(10));
  Timeline tl;
  tl.makespan = Duration::Seconds(2);
  tl.link_bytes = {5e9};
  CHECK(tl.LinkUtilisation(p, nic) == doctest::Approx(0.25));
  tl.makespan = Duration::Zero();  // nothing replayed: no utilisation, not a division by zero
  CHECK(tl.LinkUtilisation(p, nic) == 0.0);
}

}  // namespace
}  // namespace parasim::sim
