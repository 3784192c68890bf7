#include "scenarios/torchtitan_names.h"

#include <doctest/doctest.h>

#include <string>

#include "scenarios/catalogs.h"
#include "strategies/schedule.h"

namespace parasim {
namespace {

TEST_CASE("every torchtitan schedule maps to a registered parasim schedule and back") {
  for (const TorchtitanSchedule& s : kTorchtitanSchedules) {
    CAPTURE(std::string(s.torchtitan));
    CHECK(FindSchedule(s.parasim).ok());
    CHECK(ParasimScheduleOf(s.torchtitan) == s.parasim);
    CHECK(TorchtitanScheduleOf(s.parasim) == s.torchtitan);
  }
  CHECK(ParasimScheduleOf("LoopedBFS").empty());
  CHECK(TorchtitanScheduleOf("zb-h1").empty());
}

TEST_CASE("every torchtitan flavor names a model of the catalog, each once") {
  const StatusOr<Catalogs> cat = LoadCatalogs();
  REQUIRE(cat.ok());
  for (const TorchtitanFlavor& f : kTorchtitanFlavors) {
    CAPTURE(std::string(f.id));
    CHECK(cat->models.Find(f.id) != nullptr);
    int same = 0;
    for (const TorchtitanFlavor& g : kTorchtitanFlavors)
      same += g.name == f.name && g.flavor == f.flavor;
    CHECK(same == 1);
  }
}

}  // namespace
}  // namespace parasim
