#include "scenarios/sweep_block.h"

#include <doctest/doctest.h>

#include <string>

#include "scenarios/block_testing.h"
#include "sim/yaml_reader.h"
#include "strategies/sweep_keys.h"

namespace parasim {
namespace {

constexpr char kBase[] =
    "cluster: {gpu: h100-sxm5-80gb, nodes: 8, gpus_per_node: 8, intra_node: nvlink4-h100, "
    "inter_node: ib-ndr-400g}\n"
    "model: llama3-8b\n";

Status Read(const std::string& sweep, SweepSpec* sw) {
  return testing::ReadBlock(kBase + sweep, "", [&](const YamlContext& ctx, const YAML::Node& n) {
    return ParseSweepBlock(ctx, n, testing::TestCatalogs(), "", sw);
  });
}

TEST_CASE("layout axes in file order: lists, one value or auto, each value checked") {
  SweepSpec sw;
  REQUIRE(Read("sweep: {pp: auto, tp: [1, 2, 4], zero: 1, global_batch: {max: 512}, objective: "
               "memory, top: 3}\n",
               &sw)
              .ok());
  REQUIRE(sw.axes.size() == 3);
  CHECK(sw.axes[0].first == "pp");
  CHECK(sw.axes[0].second.is_auto);
  CHECK(sw.axes[1].second.values == std::vector<std::string>{"1", "2", "4"});
  CHECK(sw.axes[2].second.values == std::vector<std::string>{"1"});
  CHECK(sw.global_batch_max == 512);
  CHECK(sw.objective == Objective::kMemory);
  CHECK(sw.top == 3);
  CHECK(sw.hardware.empty());
  CHECK(sw.where == "x.yaml:3:8");
  // A bad value at its own line and column, in the table's words.
  CHECK(Read("sweep:\n  tp: [1, eight]\n", &sw).message() ==
        "x.yaml:4:11: error: sweep.tp: expected an integer from 1 to 65536, got 'eight' (counts "
        "take no unit)");
  CHECK(Read("sweep: {global_batch: auto}\n", &sw).message().find("global_batch cannot be auto") !=
        std::string::npos);
  CHECK(Read("sweep: {tp: []}\n", &sw).message().find("an empty list sweeps nothing") !=
        std::string::npos);
}

TEST_CASE("the block's keys: the table's, the hardware keys, objective and top") {
  const std::vector<std::string_view> keys = SweepBlockKeys();
  CHECK(keys.size() == SweepKeys().size() + HardwareSweepKeys().size() + 2);
  CHECK(keys.front() == "tp");
  CHECK(keys.back() == "top");
  SweepSpec sw;
  CHECK(Read("sweep: {micro_batchs: [1]}\n", &sw).message().find("did you mean 'micro_batch'") !=
        std::string::npos);
}

TEST_CASE("hardware co-design: every combination of cluster and model values, labelled") {
  SweepSpec sw;
  REQUIRE(Read("sweep:\n  gpu: [h100-sxm5-80gb, h200-sxm-141gb]\n  nodes: [4, 8]\n"
               "  layers: 16\n",
               &sw)
              .ok());
  REQUIRE(sw.hardware.size() == 4);
  CHECK(sw.hardware[0].label == "gpu=h100-sxm5-80gb nodes=4 layers=16");
  CHECK(sw.hardware[1].label == "gpu=h200-sxm-141gb nodes=4 layers=16");
  CHECK(sw.hardware[3].cluster.gpus() == 64);
  CHECK(sw.hardware[3].cluster.gpu.id == "h200-sxm-141gb");
  CHECK(sw.hardware[3].model.layers == 16);  // llama3-8b extended
  CHECK(sw.hardware[3].model.hidden == 4096);
  // Cluster fragments merge over the scenario's cluster.
  SweepSpec fragments;
  REQUIRE(Read("sweep: {cluster: [{gpu: b200, intra_node: nvlink5}, {gpu: h100-sxm5-80gb, nodes: "
               "2}]}\n",
               &fragments)
              .ok());
  REQUIRE(fragments.hardware.size() == 2);
  CHECK(fragments.hardware[0].label == "gpu=b200 intra_node=nvlink5");
  CHECK(fragments.hardware[0].cluster.intra.id == "nvlink5");
  CHECK(fragments.hardware[0].cluster.nodes == 8);
  CHECK(fragments.hardware[1].label == "gpu=h100-sxm5-80gb nodes=2");
  CHECK(fragments.hardware[1].cluster.gpu.id == "h100-sxm5-80gb");
  CHECK(fragments.hardware[1].cluster.nodes == 2);
  // Each combination starts from the scenario's cluster, not from the one before it: the H100
  // after the B200 keeps the scenario's NVLink 4 (it took the B200's NVLink 5 until 2026-11-28).
  CHECK(fragments.hardware[1].cluster.intra.id == "nvlink4-h100");
  SweepSpec crossed;
  REQUIRE(Read("sweep:\n  cluster: [{gpu: h100-sxm5-80gb}, {gpu: b200, intra_node: nvlink5}]\n"
               "  nodes: [4, 8]\n",
               &crossed)
              .ok());
  REQUIRE(crossed.hardware.size() == 4);
  for (const SweepHardware& h : crossed.hardware) {
    CAPTURE(h.label);
    CHECK(h.cluster.intra.id == (h.cluster.gpu.id == "b200" ? "nvlink5" : "nvlink4-h100"));
  }
}

TEST_CASE("hardware keys are listed, parsed as the scenario's, and priced for the cost objective") {
  SweepSpec sw;
  CHECK(Read("sweep: {gpu: auto}\n", &sw).message().find("gpu cannot be auto") !=
        std::string::npos);
  CHECK(Read("sweep: {cluster: [b200]}\n", &sw)
            .message()
            .find("expected a list of cluster "
                  "mappings") != std::string::npos);
  const Status unknown = Read("sweep: {gpu: [b2000]}\n", &sw);
  CHECK(unknown.message().find("unknown GPU 'b2000' (did you mean 'b200'?)") != std::string::npos);
  CHECK(unknown.message().find("(in the sweep's combination gpu=b2000)") != std::string::npos);
  CHECK(Read("sweep: {gpu: [b200], objective: cost}\n", &sw)
            .message()
            .find("objective cost compares clusters by price, but gpu=b200 has none") !=
        std::string::npos);
}

TEST_CASE("an error inside a swept cluster or model is told at the swept value") {
  // They were told at file:1:1 (the combination's blocks are rebuilt, without marks).
  SweepSpec sw;
  const Status bogus = Read("sweep:\n  cluster: [{gpu: b200}, {bogus: 1}]\n", &sw);
  CHECK(bogus.message().find("x.yaml:4:26: error: cluster.bogus: unknown key 'bogus'") == 0);
  const Status hidden = Read("sweep:\n  hidden: [4096, 4095]\n", &sw);
  CHECK(hidden.message().find("x.yaml:4:18: error: model.heads: hidden 4095") == 0);
  // Two axes on one block: each key's error at its own value, the block's at the whole block's.
  const Status two =
      Read("sweep:\n  cluster: [{gpu: b200, intra_nod: nvlink5}]\n  nodes: [8, 16]\n", &sw);
  CHECK(two.message().find("x.yaml:4:13: error: cluster.intra_nod: unknown key") == 0);
  // A bad value deep inside a swept cluster, at the value (a review: at the list item, once the
  // combinations were built from copies).
  const Status deep = Read(
      "sweep:\n  cluster:\n    - {gpu: b200}\n    - {gpu: {extends: b200, sustained_factor: 7}}\n",
      &sw);
  CAPTURE(deep.message());
  CHECK(deep.message().find("x.yaml:6:47: error: cluster.gpu.sustained_factor") == 0);
}

TEST_CASE("swept GPUs: values differing in nested keys label apart; an extended GPU stays so") {
  // Two inline GPUs that differ only in their peaks shared the label "extends=h100-sxm5-80gb",
  // and the sweep dropped the second's layouts as repeats of the first's.
  SweepSpec sw;
  REQUIRE(Read("sweep:\n  gpu: [{extends: h100-sxm5-80gb, peak: {bf16: 500TFLOP/s}}, "
               "{extends: h100-sxm5-80gb, peak: {bf16: 900TFLOP/s}}]\n",
               &sw)
              .ok());
  REQUIRE(sw.hardware.size() == 2);
  CHECK(sw.hardware[0].label == "gpu.extends=h100-sxm5-80gb gpu.peak.bf16=500TFLOP/s");
  CHECK(sw.hardware[1].label == "gpu.extends=h100-sxm5-80gb gpu.peak.bf16=900TFLOP/s");
  // Values that label alike are still two combinations.
  SweepSpec same;
  REQUIRE(Read("sweep:\n  gpu: [b200, b200]\n", &same).ok());
  REQUIRE(same.hardware.size() == 2);
  CHECK(same.hardware[0].label != same.hardware[1].label);
  // A scenario that extends its GPU (or a --set under it) extends each swept catalog id alike.
  SweepSpec ext;
  REQUIRE(testing::ReadBlock(
              "cluster: {gpu: {extends: h100-sxm5-80gb, sustained_factor: 0.7}, nodes: 8, "
              "inter_node: ib-ndr-400g}\nmodel: llama3-8b\nsweep: {gpu: [h100-sxm5-80gb, b200]}\n",
              "",
              [&](const YamlContext& ctx, const YAML::Node& n) {
                return ParseSweepBlock(ctx, n, testing::TestCatalogs(), "", &ext);
              })
              .ok());
  REQUIRE(ext.hardware.size() == 2);
  CHECK(ext.hardware[1].cluster.gpu.id == "b200");
  CHECK(ext.hardware[0].cluster.gpu.sustained_factor == 0.7);
  CHECK(ext.hardware[1].cluster.gpu.sustained_factor == 0.7);
  // So does a cluster fragment that names a catalog GPU (it had replaced the extension whole).
  SweepSpec frag;
  REQUIRE(testing::ReadBlock(
              "cluster: {gpu: {extends: h100-sxm5-80gb, sustained_factor: 0.7}, nodes: 8, "
              "inter_node: ib-ndr-400g}\nmodel: llama3-8b\nsweep: {cluster: [{gpu: b200, "
              "intra_node: nvlink5}, {nodes: 4}]}\n",
              "",
              [&](const YamlContext& ctx, const YAML::Node& n) {
                return ParseSweepBlock(ctx, n, testing::TestCatalogs(), "", &frag);
              })
              .ok());
  REQUIRE(frag.hardware.size() == 2);
  CHECK(frag.hardware[0].label == "gpu=b200 intra_node=nvlink5");
  CHECK(frag.hardware[0].cluster.gpu.id == "b200");
  CHECK(frag.hardware[0].cluster.gpu.sustained_factor == 0.7);
  CHECK(frag.hardware[1].cluster.gpu.sustained_factor == 0.7);
}

}  // namespace
}  // namespace parasim
