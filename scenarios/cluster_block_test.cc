#include "scenarios/cluster_block.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "scenarios/block_testing.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

// The cluster block of `text` read into `c`.
Status Read(const std::string& text, ClusterSpec* c, const std::string& dir = "") {
  return testing::ReadBlock(text, "cluster", [&](const YamlContext& ctx, const YAML::Node& n) {
    return ParseCluster(ctx, n, testing::TestCatalogs(), c, dir);
  });
}

TEST_CASE("a cluster of catalog parts, with the defaults of what it leaves out") {
  ClusterSpec c;
  REQUIRE(Read("cluster:\n  gpu: a100-sxm4-80gb\n  nodes: 4\n  gpus_per_node: 8\n"
               "  intra_node: nvlink3-a100\n  inter_node: ib-hdr-200g\n",
               &c)
              .ok());
  CHECK(c.gpu.id == "a100-sxm4-80gb");
  CHECK(c.gpus() == 32);
  CHECK(c.intra.id == "nvlink3-a100");
  CHECK(c.inter.kind == FabricKind::kInter);
  CHECK(c.oversubscription == 1.0);
  CHECK(c.gpu_hour_cost == 0);
  // One GPU needs no fabric; more than one node needs the inter-node one.
  ClusterSpec one;
  REQUIRE(Read("cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 1}\n", &one).ok());
  CHECK(one.inter.id == "none");
  ClusterSpec two;
  CHECK(Read("cluster: {gpu: h100-sxm5-80gb, nodes: 2, gpus_per_node: 1}\n", &two).message() ==
        "x.yaml:1:10: error: cluster.inter_node: missing required key 'inter_node' (a catalog "
        "fabric id such as ib-hdr-200g or an inline {bandwidth, latency})");
}

TEST_CASE("inline GPU and fabric; an unknown id lists the catalog's") {
  ClusterSpec c;
  REQUIRE(Read("cluster:\n  gpu: {memory: 80GiB, hbm_bandwidth: 2TB/s, sms: 100, peak: {bf16: "
               "300TFLOP/s}}\n  nodes: 1\n  gpus_per_node: 2\n"
               "  intra_node: {bandwidth: 100GB/s, latency: 2us}\n",
               &c)
              .ok());
  CHECK(c.gpu.id == "inline");
  CHECK(c.gpu.inline_spec);
  CHECK(c.intra.inline_spec);
  CHECK(c.gpu.memory.gib() == 80);
  CHECK(c.intra.kind == FabricKind::kIntra);
  CHECK(c.intra.latency == Duration::Microseconds(2));
  ClusterSpec bad;
  const Status st = Read("cluster: {gpu: a100-80gb, nodes: 1, gpus_per_node: 1}\n", &bad);
  CHECK(st.message().find("x.yaml:1:16: error: cluster.gpu: unknown GPU 'a100-80gb'") == 0);
  CHECK(st.message().find("catalog GPUs: ") != std::string::npos);
}

TEST_CASE("a catalog GPU or fabric extended: the keys given replace the entry's, the id stays") {
  ClusterSpec base;
  REQUIRE(Read("cluster: {gpu: h100-sxm5-80gb, nodes: 2, inter_node: ib-ndr-400g}\n", &base).ok());
  ClusterSpec c;
  REQUIRE(Read("cluster:\n  gpu: {extends: h100-sxm5-80gb, memory: 96GiB, sustained_factor: "
               "0.7, peak: {bf16: 1200TFLOP/s}}\n  nodes: 2\n"
               "  inter_node: {extends: ib-ndr-400g, efficiency: 0.5}\n",
               &c)
              .ok());
  CHECK(c.gpu.id == "h100-sxm5-80gb");  // calibration profiles and prices name it
  CHECK(c.gpu.name == base.gpu.name + " (memory, sustained_factor, peak changed)");
  CHECK(c.gpu.memory.gib() == 96);
  CHECK(c.gpu.sustained_factor == 0.7);
  CHECK(c.gpu.Peak(Dtype::kBf16).flops_per_second() == 1.2e15);
  // What the mapping leaves out is the entry's: the other formats' peaks, the rates, the host.
  CHECK(c.gpu.Peak(Dtype::kFp8).flops_per_second() ==
        base.gpu.Peak(Dtype::kFp8).flops_per_second());
  CHECK(c.gpu.hbm_bandwidth.bytes_per_second() == base.gpu.hbm_bandwidth.bytes_per_second());
  CHECK(c.gpu.sms == base.gpu.sms);
  CHECK(c.gpu.host_op_time == base.gpu.host_op_time);
  CHECK(c.gpu.device_names == base.gpu.device_names);
  CHECK(c.inter.id == "ib-ndr-400g");
  CHECK(c.inter.efficiency == 0.5);
  CHECK(c.inter.bandwidth.bytes_per_second() == base.inter.bandwidth.bytes_per_second());
  CHECK(c.inter.latency == base.inter.latency);
  CHECK(c.inter.kind == FabricKind::kInter);
  // Which values are the scenario's, for the calibration lines that name what a profile replaced.
  CHECK(c.gpu.scenario_keys == std::vector<std::string>{"memory", "sustained_factor", "peak"});
  CHECK(c.inter.scenario_keys == std::vector<std::string>{"efficiency"});
  CHECK_FALSE(c.gpu.inline_spec);
  CHECK_FALSE(base.gpu.inline_spec);
  CHECK(base.gpu.scenario_keys.empty());
  // An unknown entry is refused where `extends` names it; a key outside the GPU's too.
  ClusterSpec bad;
  CHECK(Read("cluster: {gpu: {extends: h100}, nodes: 1}\n", &bad)
            .message()
            .find("x.yaml:1:26: error: cluster.gpu.extends: unknown GPU 'h100'") == 0);
  CHECK(Read("cluster: {gpu: {extends: b200, bogus: 1}, nodes: 1}\n", &bad)
            .message()
            .find("x.yaml:1:32: error: cluster.gpu.bogus: unknown key 'bogus'") == 0);
  CHECK(Read("cluster: {gpu: b200, nodes: 2, inter_node: {extends: ib-ndr}}\n", &bad)
            .message()
            .find("x.yaml:1:54: error: cluster.inter_node.extends: unknown fabric 'ib-ndr'") == 0);
  // What an extension sets is checked as an inline GPU's is (memory: 0B ran, "does not fit").
  CHECK(Read("cluster:\n  gpu: {extends: h100-sxm5-80gb, memory: 0B}\n", &bad).message() ==
        "x.yaml:2:42: error: cluster.gpu.memory: expected a size from 1 GiB to 1 PiB (the "
        "catalog's GPUs hold 40 to 288 GiB), got 0 B");
  // Nor without bound (1e30GiB printed 976562500000000019418578944.00 TiB "per GPU").
  CHECK(Read("cluster:\n  gpu: {extends: h100-sxm5-80gb, memory: 1e30GiB}\n", &bad)
            .message()
            .find("x.yaml:2:42: error: cluster.gpu.memory: expected a size from 1 GiB to 1 PiB") ==
        0);
  // Keys set under the default NVLink (the GPU's server names it) extend that default.
  ClusterSpec nv;
  REQUIRE(Read("cluster: {gpu: h100-sxm5-80gb, intra_node: {efficiency: 0.5}}\n", &nv).ok());
  CHECK(nv.intra.id == "nvlink4-h100");
  CHECK(nv.intra.efficiency == 0.5);
  CHECK(nv.intra.bandwidth.bytes_per_second() == base.intra.bandwidth.bytes_per_second());
  // Without `extends` an inline GPU still needs its own memory, bandwidth, peak and SMs.
  CHECK(Read("cluster: {gpu: {sustained_factor: 0.7}, nodes: 1}\n", &bad)
            .message()
            .find("missing required key 'memory'") != std::string::npos);
}

TEST_CASE("the NVLink domain spans whole nodes") {
  ClusterSpec c;
  REQUIRE(Read("cluster: {gpu: gb200, nodes: 36, gpus_per_node: 4, nvlink_domain: 72, "
               "intra_node: nvlink5, inter_node: ib-ndr-400g}\n",
               &c)
              .ok());
  CHECK(c.domain() == 72);
  CHECK(Read("cluster: {gpu: gb200, nodes: 36, gpus_per_node: 4, nvlink_domain: 70, "
             "intra_node: nvlink5, inter_node: ib-ndr-400g}\n",
             &c)
            .message()
            .find("70 GPUs is not a whole number of 4-GPU nodes") != std::string::npos);
}

TEST_CASE("a GPU-hour price: one number, or one per GPU type including the cluster's") {
  const std::string shape = "nodes: 1, gpus_per_node: 1";
  ClusterSpec c;
  REQUIRE(Read("cluster: {gpu: b200, " + shape + ", gpu_hour_cost: 4.5}\n", &c).ok());
  CHECK(c.gpu_hour_cost == 4.5);
  REQUIRE(
      Read("cluster: {gpu: b200, " + shape + ", gpu_hour_cost: {b200: 4, h100-sxm5-80gb: 2}}\n", &c)
          .ok());
  CHECK(c.gpu_hour_cost == 4);
  CHECK(Read("cluster: {gpu: b200, " + shape + ", gpu_hour_cost: {h100-sxm5-80gb: 2}}\n", &c)
            .message()
            .find("no price for gpu 'b200' (priced: h100-sxm5-80gb)") != std::string::npos);
}

TEST_CASE("a calibration profile, relative to the scenario's folder, replaces catalog values") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  std::ofstream(dir + "/h100.yaml") << "gpu: h100-sxm5-80gb\ncompute: {gemm_efficiency: 0.5}\n";
  ClusterSpec c;
  REQUIRE(Read("cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 1, calibration: "
               "h100.yaml}\n",
               &c, dir)
              .ok());
  CHECK(c.gpu.gemm_efficiency == 0.5);
  CHECK(c.calibration == dir + "/h100.yaml");
  CHECK(c.calibrated.size() == 1);
  CHECK(Read("cluster: {gpu: b200, nodes: 1, gpus_per_node: 1, calibration: h100.yaml}\n", &c, dir)
            .message()
            .find("was measured on 'h100-sxm5-80gb'") != std::string::npos);
  CHECK(Read("cluster: {gpu: b200, nodes: 1, gpus_per_node: 1, calibration: none.yaml}\n", &c, dir)
            .message()
            .find("not found") != std::string::npos);
}

}  // namespace
}  // namespace parasim
