#include "scenarios/megatron_exprs.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("--moe-layer-freq list expressions") {
  auto v = ParseLayerList("([0]*3+[1]*11)");
  REQUIRE(v.ok());
  REQUIRE(v->size() == 14);
  CHECK((*v)[2] == 0);
  CHECK((*v)[3] == 1);
  auto w = ParseLayerList("[1, 0, 1,0]");
  REQUIRE(w.ok());
  CHECK(*w == std::vector<int>{1, 0, 1, 0});
  auto x = ParseLayerList("([0]+[1,1]*2)*2");
  REQUIRE(x.ok());
  CHECK(*x == std::vector<int>{0, 1, 1, 1, 1, 0, 1, 1, 1, 1});
  for (const char* bad : {"[0]*", "([0]*3+[1]*11", "[a]", "[0]*3 x"}) {
    CAPTURE(bad);
    CHECK(!ParseLayerList(bad).ok());
  }
}

TEST_CASE("--pipeline-model-parallel-layout strings") {
  // The layouts of the corpus (docs: pp x vp segments).
  auto a = ParsePipelineLayout("Et*7|t*7mL");
  REQUIRE(a.ok());
  REQUIRE(a->size() == 2);
  CHECK((*a)[0].embedding);
  CHECK((*a)[0].layers == 7);
  CHECK((*a)[1].layers == 7);
  CHECK((*a)[1].mtp == 1);
  CHECK((*a)[1].loss);
  auto b = ParsePipelineLayout("Et*3|(tt|)*6mL");
  REQUIRE(b.ok());
  REQUIRE(b->size() == 8);  // pp 2 x vp 4
  int layers = 0;
  for (const LayoutSegment& s : *b) layers += s.layers;
  CHECK(layers == 15);
  CHECK((*b)[7].layers == 0);
  CHECK((*b)[7].mtp == 1);
  auto c = ParsePipelineLayout("Et*2|(tt|)*5t|tmL");
  REQUIRE(c.ok());
  CHECK(c->size() == 8);
  CHECK(!ParsePipelineLayout("Et*3|(tt|*6mL").ok());
  CHECK(!ParsePipelineLayout("Ex|tL").ok());
}

TEST_CASE("a hybrid pattern splits into pipeline segments and MTP parts") {
  const HybridPattern p = SplitHybridPattern("MEM*|EM-/*E/*E");
  CHECK(p.segments == std::vector<std::string>{"MEM*", "EM-"});
  CHECK(p.mtp == std::vector<std::string>{"*E", "*E"});
  CHECK(p.Stack() == "MEM*EM-");
  const HybridPattern plain = SplitHybridPattern("M-M*");
  CHECK(plain.segments == std::vector<std::string>{"M-M*"});
  CHECK(plain.mtp.empty());
  // Empty parts are kept, for the readers to refuse with their flag's place.
  CHECK(SplitHybridPattern("M-||M-/").segments.size() == 3);
  CHECK(SplitHybridPattern("M-||M-/").mtp == std::vector<std::string>{""});
}

}  // namespace
}  // namespace parasim
