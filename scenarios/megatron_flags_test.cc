#include "scenarios/megatron_flags.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace parasim {
namespace {

TEST_CASE("the flag table: sorted, each flag once, each with a reason") {
  std::set<std::string_view> seen;
  std::string_view prev;
  for (const MegatronFlag& f : MegatronFlags()) {
    CAPTURE(f.name);
    CHECK(f.name.rfind("--", 0) == 0);
    CHECK(seen.insert(f.name).second);
    CHECK(prev < f.name);
    CHECK(!f.why.empty());
    prev = f.name;
  }
  // The corpus's 340 flags and the common ones it lacks.
  CHECK(MegatronFlags().size() >= 340);
}

TEST_CASE("rows as the importer reads them") {
  struct Row {
    const char* name;
    FlagUse use;
    FlagArity arity;
  };
  for (const Row& r : {Row{"--num-layers", FlagUse::kMapped, FlagArity::kOne},
                       Row{"--sequence-parallel", FlagUse::kMapped, FlagArity::kBare},
                       Row{"--recompute-modules", FlagUse::kMapped, FlagArity::kList},
                       Row{"--deterministic-mode", FlagUse::kMapped, FlagArity::kBare},
                       Row{"--cuda-graph-impl", FlagUse::kNotModelled, FlagArity::kOne},
                       Row{"--lr", FlagUse::kNoEffect, FlagArity::kOne},
                       Row{"--hybrid-layer-pattern", FlagUse::kMapped, FlagArity::kOne},
                       Row{"--flextron", FlagUse::kRefused, FlagArity::kBare}}) {
    CAPTURE(r.name);
    const MegatronFlag* f = FindMegatronFlag(r.name);
    REQUIRE(f != nullptr);
    CHECK(f->use == r.use);
    CHECK(f->arity == r.arity);
  }
  CHECK(FindMegatronFlag("--no-such-flag") == nullptr);
  CHECK(NearestMegatronFlag("--num-layer") == "--num-layers");
  CHECK(NearestMegatronFlag("--sequence-paralel") == "--sequence-parallel");
}

}  // namespace
}  // namespace parasim
