#include "tools/verbs/inputs.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("--gpus: lists, progressions up to the last count, and what is refused") {
  CHECK(*ParseGpuList("") == std::vector<int64_t>{});
  CHECK(*ParseGpuList("8,16,64") == std::vector<int64_t>{8, 16, 64});
  // Doubling (8, 16: a ratio), then stepping (8, 12: a difference), each up to the last.
  CHECK(*ParseGpuList("8,16,...,128") == std::vector<int64_t>{8, 16, 32, 64, 128});
  CHECK(ParseGpuList("16,8,...,64").status().message().find("counts must increase") !=
        std::string::npos);
  CHECK(ParseGpuList("8,8,...,64").status().message().find("counts must increase") !=
        std::string::npos);
  // A progression that does not count up to its last count (it read "needs the last count").
  CHECK(ParseGpuList("64,32,...,8")
            .status()
            .message()
            .find("'...' counts up from 32 to the count after it, and 8 is not larger") !=
        std::string::npos);
  CHECK(ParseGpuList("16,32,...").status().message().find("'...' needs the last count after it") !=
        std::string::npos);
  CHECK(*ParseGpuList("8,12,...,24") == std::vector<int64_t>{8, 12, 16, 20, 24});
  CHECK(*ParseGpuList("2,4,...,8") == std::vector<int64_t>{2, 4, 8});
  for (const char* bad : {"8,4", "8,x", "0", "8,...,64", "8,16,...,...,64", "8,,16", "1e3"}) {
    CAPTURE(bad);
    auto r = ParseGpuList(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().exit_code() == 2);
    CHECK(r.status().message().rfind(std::string("--gpus=") + bad + ":1:1: error: ", 0) == 0);
  }
  // A progression of more counts than a scale replays is refused, not cut short (a geometric
  // one from 1 to 10^8 is 28 counts; an arithmetic one of step 1 is not).
  CHECK(ParseGpuList("1,2,...,100000000")->size() == 28);
  CHECK(ParseGpuList("2,3,...,129")->size() == 128);
  const auto many = ParseGpuList("2,3,...,100000000");
  REQUIRE_FALSE(many.ok());
  CHECK(many.status().message().find("more than 128 counts") != std::string::npos);
  CHECK_FALSE(ParseGpuList("2,3,...,130").ok());
  CHECK(ParseGpuList("2,3,...,129,200").status().message().find("more than 128") !=
        std::string::npos);
  CHECK(ParseGpuList("8,4").status().message().find("counts must increase") != std::string::npos);
}

constexpr const char* kSmall =
    "{cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvlink3-a100},\n"
    " model: llama2-7b, training: {seq_len: 2048, global_batch: 16},\n"
    " parallelism: {tp: 2, pp: 1, dp: 4}}\n";

TEST_CASE("diff's two sides: B is A again under --set-b, or its own document") {
  const Document a{"<dict>", kSmall};
  auto p = LoadPair({.a = a, .sets_b = {"parallelism.tp=4", "parallelism.dp=2"}});
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  CHECK(p->a.layout.tp == 2);
  CHECK(p->b.layout.tp == 4);
  // --set applies to both sides, --set-a to A alone.
  p = LoadPair({.a = a,
                .b = a,
                .sets = {"training.global_batch=32"},
                .sets_a = {"parallelism.tp=8", "parallelism.dp=1"}});
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  CHECK(p->a.layout.tp == 8);
  CHECK(p->b.layout.tp == 2);
  CHECK(p->a.training.global_batch == 32);
  CHECK(p->b.training.global_batch == 32);
}

TEST_CASE("diff refuses nothing to compare, and a side whose layout is not valid") {
  const Document a{"<dict>", kSmall};
  auto none = LoadPair({.a = a});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().rfind("<dict>:1:1: error: nothing to compare", 0) == 0);
  auto bad = LoadPair({.a = a, .sets_b = {"parallelism.tp=3"}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().exit_code() == 2);
}

TEST_CASE("a scenario of a document; the fixed layout checked for the verbs that replay it") {
  auto s = LoadFixedScenario(Document{"<dict>", kSmall}, {"parallelism.zero=1"});
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s->layout.zero == 1);
  CHECK_FALSE(LoadFixedScenario(Document{"<dict>", kSmall}, {"parallelism.pp=3"}).ok());
  auto missing = LoadScenarioOf(Document{"no/such.yaml", std::nullopt}, {});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().rfind("no/such.yaml:1:1: error: ", 0) == 0);
  CHECK(Document{}.empty());
  CHECK_FALSE(Document{"a.yaml", std::nullopt}.empty());
}

TEST_CASE("--jobs 0 takes every core; the processes pass through") {
  CHECK(SweepOptionsOf(3, nullptr).jobs == 3);
  CHECK(SweepOptionsOf(0, nullptr).jobs >= 1);
  CHECK(SweepOptionsOf(0, nullptr).processes == nullptr);
}

}  // namespace
}  // namespace parasim
