// A small A100 cluster, a catalog model and a layout to lower and replay in tests of the step
// planners (step_test.cc, schedule_test.cc).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "strategies/plan.h"
#include "strategies/step.h"

namespace parasim::testing {

struct Bench {
  HardwareCatalog hw = *LoadHardwareCatalog();
  ModelCatalog models = *LoadModelCatalog();
  ClusterSpec cluster;
  ModelSpec model;
  Training t;
  Layout l;

  explicit Bench(int64_t gpus, const char* model_id = "llama2-7b") {
    Hardware("a100-sxm4-80gb", "nvlink3-a100", "ib-hdr-200g");
    cluster.gpus_per_node = static_cast<int>(std::min<int64_t>(gpus, 8));
    cluster.nodes = gpus / cluster.gpus_per_node;
    model = *models.Find(model_id);
    t.seq_len = 2048;
    t.micro_batch = 1;
    t.global_batch = 16;
  }
  // Every GPU its own node: data-parallel (and other) groups cross the network.
  void OneGpuANode() {
    cluster.nodes *= cluster.gpus_per_node;
    cluster.gpus_per_node = 1;
  }
  // No host in the replay (RankTopology::Issue): the GPU's work alone.
  void NoHost() { cluster.gpu.host_op_time = Duration::Zero(); }
  // Catalog GPU and fabrics by id.
  void Hardware(const char* gpu, const char* intra, const char* inter) {
    cluster.gpu = *hw.FindGpu(gpu);
    cluster.intra = *hw.FindFabric(intra);
    cluster.inter = *hw.FindFabric(inter);
  }
  // A fine-grained MoE from Mixtral 8x7B's shape (top 8 of 64 experts of 1024), `layers`
  // layers, on H100 nodes with 400 Gb/s InfiniBand: EP groups larger than 8 cross nodes.
  void FineGrainedMoe(int layers) {
    Hardware("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g");
    model = *models.Find("mixtral-8x7b");
    model.moe.experts = 64;
    model.moe.top_k = 8;
    model.moe.expert_ffn_hidden = 1024;
    model.layers = layers;
  }
  // A model whose stages are uniform: the embedding and LM head cost next to nothing.
  void UniformStages() {
    model.vocab = 128;
    model.tied_embeddings = true;
  }
  // The layout check's "key: message", or "" when the layout is accepted.
  std::string PlanError() const {
    Scenario s;
    s.cluster = cluster;
    s.model = model;
    s.training = t;
    s.layout = l;
    const auto problem = CheckLayout(s);
    return problem ? problem->key + ": " + problem->message : "";
  }
  StepReport Run(StepOptions o = {}) {
    auto r = SimulateStep(model, t, l, cluster, o);
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    return *r;
  }
};

}  // namespace parasim::testing
