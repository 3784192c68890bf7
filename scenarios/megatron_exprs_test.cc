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

TEST_CASE("layout commas are cosmetic, as in Megatron-LM's own example") {
  auto d = ParsePipelineLayout("Et*3|(tt|)*29,m|L");
  REQUIRE(d.ok());
  REQUIRE(d->size() == 32);
  CHECK((*d)[30].mtp == 1);
  CHECK((*d)[31].loss);
  // A list keeps its commas as separators.
  CHECK(ParseLayerList("[1,0]")->size() == 2);
}

TEST_CASE("deep parentheses are refused, not recursed into without bound") {
  const std::string deep = std::string(20000, '(') + "t" + std::string(20000, ')');
  auto a = ParsePipelineLayout(deep);
  REQUIRE(!a.ok());
  CHECK(a.status().message().find("nested deeper than 64") != std::string::npos);
  const std::string list = std::string(20000, '(') + "[1]" + std::string(20000, ')');
  CHECK(!ParseLayerList(list).ok());
  // 64 levels are fine.
  CHECK(ParsePipelineLayout(std::string(64, '(') + "t" + std::string(64, ')')).ok());
  CHECK(ParseLayerList(std::string(64, '(') + "[1]" + std::string(64, ')')).ok());
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
