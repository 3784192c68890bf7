// The MLPs of a layer: the experts sharded by EP, and the all-to-all dispatcher's collectives.
#include "models/mlp.h"

#include <doctest/doctest.h>
#include <fmt/core.h>

#include <map>
#include <string>
#include <vector>

#include "models/layer_graph.h"

namespace parasim {
namespace {

TEST_CASE("MoE: experts sharded by EP, active compute follows top_k") {
  auto cat = LoadModelCatalog();
  ModelSpec m = *cat->Find("mixtral-8x7b");
  ModelGraph g1 = BuildModelGraph(m, GraphShape{.ep = 1});
  ModelGraph g8 = BuildModelGraph(m, GraphShape{.ep = 8});
  CHECK(BlockParams(g1.moe, true) / BlockParams(g8.moe, true) == doctest::Approx(8));
  // Expert FLOPs per token are top_k dense MLPs whatever the EP degree.
  // (The two blocks differ in ops: one expert a rank needs no sort by local expert.)
  double e1 = 0, e8 = 0;
  for (size_t i = 0; i < g1.moe.size(); ++i) {
    if (g1.moe.op(i).expert) e1 += g1.moe.op(i).fwd_flops.flops();
  }
  for (size_t i = 0; i < g8.moe.size(); ++i) {
    if (g8.moe.op(i).expert) e8 += g8.moe.op(i).fwd_flops.flops();
  }
  const double T = 2048;
  CHECK(e1 == doctest::Approx(2 * T * 3 * 2.0 * 4096 * 14336).epsilon(0.001));
  // With EP the busiest rank's share sets the pace: its expected load from the routing draw.
  CHECK(e8 == doctest::Approx(e1 * m.moe.BusiestRankLoad(T, 8)).epsilon(0.001));
  CHECK(m.moe.BusiestRankLoad(T, 8) > 1.01);
  bool a2a = false;
  for (size_t i = 0; i < g8.moe.size(); ++i)
    a2a |= g8.moe.op(i).fwd_comm.kind == CommKind::kAllToAll;
  CHECK(a2a);
}

TEST_CASE(
    "the routed copies' elementwise ops and saved tensors count the copies, not a row an expert") {
  // Qwen3-30B-A3B (128 experts, top 8) at one token: 8 routed copies, whose SwiGLU reads two
  // 768-wide halves and writes one (3 x 8 x 768 x 2 B). A GEMM's rows stay a whole number per
  // expert (1); the elementwise op had touched 128 rows, a row for each local expert.
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("qwen3-30b-a3b");
  const ModelGraph g = BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 1});
  bool found = false;
  for (size_t i = 0; i < g.moe.size(); ++i) {
    const Op& op = g.moe.op(i);
    if (op.name == "expert_swiglu") {
      found = true;
      CHECK(op.fwd_bytes.bytes() == doctest::Approx(3.0 * 8 * 768 * 2));
    }
    if (op.name == "expert_fc1") CHECK(op.m == 1);
  }
  CHECK(found);
  // At a training micro-batch the copies are the rows (4,096 tokens x 8 over 128 experts: 256).
  const ModelGraph t = BuildModelGraph(m, GraphShape{.micro_batch = 1, .seq_len = 4096});
  for (size_t i = 0; i < t.moe.size(); ++i) {
    const Op& op = t.moe.op(i);
    if (op.name == "expert_swiglu") {
      CHECK(op.fwd_bytes.bytes() == doctest::Approx(3.0 * 256 * 128 * 768 * 2));
    }
  }
}

TEST_CASE("shared experts: one MLP as model.mlp makes it, keeping its intermediates") {
  // Megatron-Core's SharedExpertMLP is an MLP: a squared-ReLU (gelu) model's shared experts
  // have two matrices, a SwiGLU model's three, as the architecture's count has them (the graph
  // had given every model three: Nemotron 3 Nano 31.81B where the count, and NVIDIA, say 31.6).
  auto cat = LoadModelCatalog();
  const std::map<std::string, double> shared = {
      {"nemotron-3-nano-30b-a3b", 2.0 * 2 * 2688 * 1856},  // two of 1856, two matrices
      {"deepseek-v3", 1.0 * 3 * 7168 * 2048}};             // one of 2048, three matrices
  for (const auto& [id, want] : shared) {
    const ModelSpec m = *cat->Find(id);
    const ModelGraph g = BuildModelGraph(m, GraphShape{.ep = 1});
    const Block& b = g.moe.size() > 0 ? g.moe : g.experts;
    double got = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      if (b.op(i).name.rfind("shared_expert", 0) == 0) got += b.op(i).params;
    }
    CAPTURE(id);
    CHECK(got == doctest::Approx(want));
  }
  CHECK(CountParams(*cat->Find("nemotron-3-nano-30b-a3b")).total ==
        doctest::Approx(31.58e9).epsilon(0.001));
  // Activations: Mixtral with one shared expert, 4,096 tokens, TP1: fc1's output (2 x 14,336)
  // and fc2's input (14,336), 16-bit; fc1's input is the router's (saved once).
  ModelSpec m = *cat->Find("mixtral-8x7b");
  const GraphShape shape{.micro_batch = 1, .seq_len = 4096};
  const double without = ActivationBytes(BuildModelGraph(m, shape).moe, RecomputeKind::kNone);
  m.moe.shared_experts = 1;
  const double with = ActivationBytes(BuildModelGraph(m, shape).moe, RecomputeKind::kNone);
  CHECK(with - without == doctest::Approx(4096.0 * 3 * 14336 * 2));
}

TEST_CASE("row-parallel linears keep their whole bias on every TP rank") {
  // Megatron-Core's RowParallelLinear: a bias of output_size, added after the reduction, whole
  // on every rank (GPT-3 175B at TP8: out_proj and fc2 each hold 12,288 bias parameters a rank;
  // they had held 1,536, 21,504 a layer short).
  auto cat = LoadModelCatalog();
  const ModelSpec m = *cat->Find("gpt3-175b");
  const ModelGraph g = BuildModelGraph(m, GraphShape{.tp = 8});
  for (const char* name : {"out_proj", "fc2"}) {
    for (size_t i = 0; i < g.dense.size(); ++i) {
      const Op& op = g.dense.op(i);
      if (op.name != name) continue;
      CAPTURE(name);
      CHECK(op.params == doctest::Approx(static_cast<double>(op.k) * 12288 + 12288));
    }
  }
}

TEST_CASE("MoE under TP: the all-to-all dispatcher's collectives, with and without folding") {
  // Megatron-Core's MoEAlltoAllTokenDispatcher: each rank routes its sequence-parallel shard,
  // all-to-alls it over EP, and where etp > 1 all-gathers the arrivals over the expert-TP group
  // (reduce-scatter on the way back); no TP collective surrounds the routed experts.
  auto cat = LoadModelCatalog();
  ModelSpec m = *cat->Find("mixtral-8x7b");
  const GraphShape base{.micro_batch = 1, .seq_len = 4096, .tp = 2, .sp = true, .ep = 4};
  GraphShape fold = base;
  fold.etp = 1;
  const ModelGraph tp2 = BuildModelGraph(m, base), etp1 = BuildModelGraph(m, fold);
  struct Comms {
    std::map<std::string, double> bytes;  // "fwd all-to-all ep" -> bytes, summed
    double expert_flops = 0, expert_params = 0;
    int64_t router_rows = 0;
  };
  auto comms = [](const Block& b) {  // the MoE MLP's ops, after the layer's attention
    Comms c;
    bool mlp = false;
    for (size_t i = 0; i < b.size(); ++i) {
      const Op& op = b.op(i);
      mlp |= op.name == "moe_norm";
      if (!mlp) continue;
      for (auto [dir, spec] : {std::pair{"fwd", op.fwd_comm}, std::pair{"bwd", op.bwd_comm}}) {
        if (spec.kind == CommKind::kNone) continue;
        c.bytes[fmt::format("{} {} {}", dir, CommName(spec.kind), GroupName(spec.group))] +=
            spec.bytes;
      }
      if (op.expert) {
        c.expert_flops += op.fwd_flops.flops();
        c.expert_params += op.params;
      }
      if (op.name == "router") c.router_rows = op.m;
    }
    return c;
  };
  const Comms a = comms(tp2.moe), f = comms(etp1.moe);
  const double T = 4096, h = m.hidden, k = m.moe.top_k;
  // The router sees this rank's shard of the sequence, T / tp, in both.
  CHECK(a.router_rows == 2048);
  CHECK(f.router_rows == 2048);
  // Both all-to-alls of the combine are there (a TP reduce-scatter once took their place).
  const double load2 = m.moe.BusiestRankLoad(T, 4), load1 = m.moe.BusiestRankLoad(T / 2, 4);
  CHECK(a.bytes.at("fwd all-to-all ep") == doctest::Approx(2 * (T / 2) * k * h * 2 * load2));
  CHECK(a.bytes.at("bwd all-to-all ep") == doctest::Approx(2 * (T / 2) * k * h * 2 * load2));
  // ETP2 gathers the pair's copies, T x top_k tokens, and reduce-scatters them back.
  CHECK(a.bytes.at("fwd all-gather etp") == doctest::Approx(T * k * h * 2 * load2));
  CHECK(a.bytes.at("fwd reduce-scatter etp") == doctest::Approx(T * k * h * 2 * load2));
  CHECK(a.bytes.at("bwd all-gather etp") == doctest::Approx(T * k * h * 2 * load2));
  CHECK(a.bytes.at("bwd reduce-scatter etp") == doctest::Approx(T * k * h * 2 * load2));
  CHECK(a.bytes.count("fwd all-gather tp") == 0);
  CHECK(a.bytes.count("fwd reduce-scatter tp") == 0);
  // Folded (ETP1): the all-to-alls alone, each expert whole on its rank.
  CHECK(f.bytes.size() == 2);
  CHECK(f.bytes.at("fwd all-to-all ep") == doctest::Approx(2 * (T / 2) * k * h * 2 * load1));
  CHECK(f.expert_params == doctest::Approx(2 * a.expert_params));
  // The same expert FLOPs per rank: half the tokens through whole experts.
  CHECK(f.expert_flops == doctest::Approx(a.expert_flops * load1 / load2).epsilon(0.001));
  // TP without SP (every TP rank holds the same tokens), no EP: one TP region, as a dense MLP's,
  // its input's gradient and its combined output all-reduced.
  GraphShape no_sp = base;
  no_sp.sp = false;
  no_sp.ep = 1;
  const Comms r = comms(BuildModelGraph(m, no_sp).moe);
  CHECK(r.bytes.size() == 2);
  CHECK(r.bytes.at("fwd all-reduce tp") == doctest::Approx(T * h * 2));
  CHECK(r.bytes.at("bwd all-reduce tp") == doctest::Approx(T * h * 2));
  CHECK(r.router_rows == 4096);
  // Shared experts stay a dense TP MLP: their input gathered over TP, output reduce-scattered.
  ModelSpec ds = *cat->Find("deepseek-v3");
  GraphShape dsf = fold;
  dsf.ep = 8;
  const Comms s = comms(BuildModelGraph(ds, dsf).moe);
  CHECK(s.bytes.at("fwd all-gather tp") == doctest::Approx(T * ds.hidden * 2));
  CHECK(s.bytes.at("fwd reduce-scatter tp") == doctest::Approx(T * ds.hidden * 2));
  CHECK(s.bytes.count("fwd all-gather etp") == 0);
}

TEST_CASE("a dense SwiGLU MLP: norm, two matmuls fused, the activation, fc2, residual") {
  const ModelSpec m = *LoadModelCatalog()->Find("llama3-8b");
  const GraphShape s{.seq_len = 1024, .tp = 2};
  const blocks::Dims d = blocks::MakeDims(m, s);
  blocks::BlockBuilder bb("mlp");
  blocks::AddDenseMlp(bb, m, d, m.ffn());
  const Block b = bb.Finish();
  REQUIRE(b.size() == 5);
  const char* names[] = {"mlp_norm", "fc1", "swiglu", "fc2", "mlp_residual"};
  for (size_t i = 0; i < b.size(); ++i) CHECK(b.op(i).name == names[i]);
  const double f = m.ffn() / 2.0;                        // split over TP
  CHECK(b.op(1).mm_cols == std::vector<double>{f, f});   // the gate and up projections
  CHECK(b.op(1).bwd_comm.kind == CommKind::kAllReduce);  // the input gradient, beside wgrad
  CHECK(b.op(3).fwd_comm.kind == CommKind::kAllReduce);  // leaving the TP region
  CHECK(b.op(2).fwd_math == ElementMath::kActivation);
}

}  // namespace
}  // namespace parasim
