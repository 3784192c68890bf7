// Tests of the lowering and replay of a training step: the seeds' pipeline, overlap, memory and
// scaling behaviours, each asserted on the replayed timeline (never on a closed form in the
// code path).
#include "strategies/step.h"

#include <doctest/doctest.h>
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "hardware/cost_model.h"
#include "models/layer_graph.h"
#include "strategies/memory.h"
#include "strategies/placement.h"
#include "strategies/plan.h"
#include "strategies/schedule.h"
#include "strategies/step_test_bench.h"

namespace parasim {
namespace {

using testing::Bench;

bool HasWarning(const StepReport& r, const std::string& needle) {
  for (const auto& w : r.warnings) {
    if (w.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE(
    "4 uniform stages, 16 micro-batches, 1F1B: (p-1)/m = 18.75% of the work, 3/19 of the step; "
    "interleaved v=2 halves it") {
  Bench b(4);
  b.UniformStages();
  b.l.pp = 4;
  b.t.global_batch = 16;
  StepReport r = b.Run();
  CHECK(r.micro_batches == 16);
  // Each stage idles (p-1)(F+B) of a step of (m+p-1)(F+B): 3/19 = 15.8% of the step.
  CHECK(r.ideal_bubble_of_work == doctest::Approx(0.1875));
  CHECK(r.ideal_bubble_fraction == doctest::Approx(3.0 / 19));
  CHECK(r.bubble_fraction == doctest::Approx(3.0 / 19).epsilon(0.05));
  REQUIRE(r.bubble_fraction_per_stage.size() == 4);
  for (double f : r.bubble_fraction_per_stage) CHECK(f == doctest::Approx(3.0 / 19).epsilon(0.1));
  b.l.schedule = kScheduleInterleaved;
  b.l.virtual_stages = 2;
  StepReport ri = b.Run();
  CHECK(ri.ideal_bubble_fraction == doctest::Approx(1.5 / 17.5));
  CHECK(ri.bubble_fraction == doctest::Approx(1.5 / 17.5).epsilon(0.1));
  CHECK(ri.step_time_s < r.step_time_s);
  // GPipe has the same bubble as 1F1B.
  b.l.schedule = kScheduleGpipe;
  b.l.virtual_stages = 1;
  CHECK(b.Run().bubble_fraction == doctest::Approx(3.0 / 19).epsilon(0.05));
}

TEST_CASE(
    "16 stages and 4 micro-batches: a bubble of 375% of the work, 15/19 of the step, and a "
    "warning") {
  Bench b(16);
  b.NoHost();  // the schedule's bubble alone
  b.UniformStages();
  b.model.layers = 32;
  b.l.pp = 16;
  b.t.global_batch = 4;
  StepReport r = b.Run();
  CHECK(r.ideal_bubble_of_work == doctest::Approx(3.75));
  CHECK(r.bubble_fraction == doctest::Approx(15.0 / 19).epsilon(0.03));
  CHECK(HasWarning(r, "4 micro-batches for 16 pipeline stages"));
  b.l.pp = 4;
  b.t.global_batch = 64;
  CHECK_FALSE(HasWarning(b.Run(), "micro-batches for"));
}

TEST_CASE(
    "1000 ms of compute and 200 ms of DP communication: 1200 ms without overlap, ~1000 with, "
    "~1046 when the sync slows the compute beside it") {
  Bench b(16);
  b.OneGpuANode();  // the gradient ring crosses the network
  b.l.dp = 16;
  b.t.micro_batch = 8;  // one micro-batch per step: the sync can hide behind all of backward
  b.t.global_batch = 16 * 8;
  b.l.overlap_dp = false;
  StepReport serial = b.Run();
  const double compute = serial.stage_compute_s[0];
  // Scale the network until the gradient all-reduce takes a fifth of the compute.
  for (int i = 0; i < 3; ++i) {
    b.cluster.inter.bandwidth = b.cluster.inter.bandwidth * (serial.exposed.dp / (0.2 * compute));
    serial = b.Run();
  }
  CHECK(serial.exposed.dp == doctest::Approx(0.2 * compute).epsilon(0.02));
  CHECK(serial.step_time_s == doctest::Approx(1.2 * compute).epsilon(0.01));
  b.l.overlap_dp = true;
  // Without contention the sync hides under backward.
  b.cluster.gpu.contended_compute = b.cluster.gpu.contended_memory = 1.0;
  StepReport overlapped = b.Run();
  CHECK(overlapped.step_time_s < 1.03 * compute);
  CHECK(overlapped.step_time_s >= compute);
  CHECK(overlapped.exposed.dp < 0.15 * serial.exposed.dp);
  // With it, the compute that runs beside the 200 ms sync goes at 1/1.3 of its rate (GEMMs;
  // memory-bound kernels 1/1.06): it does about 154 ms of work in those 200 ms, so the step
  // grows by up to 46 ms.
  b.cluster.gpu.contended_compute = 1.3;
  b.cluster.gpu.contended_memory = 1.06;
  StepReport contended = b.Run();
  CHECK(contended.step_time_s > overlapped.step_time_s + 0.02 * compute);
  CHECK(contended.step_time_s < overlapped.step_time_s + 0.047 * compute);
}

TEST_CASE("GPipe holds all m micro-batches' activations at the peak; 1F1B at most p on stage 0") {
  Bench b(4);
  b.UniformStages();
  b.l.pp = 4;
  b.t.global_batch = 16;
  MemoryReport mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  const double act = mem.stages[0].activations_bytes / mem.stages[0].in_flight;
  LoweredStep low;
  auto in_flight = [&](ScheduleId s, int stage) {
    b.l.schedule = s;
    sim::Timeline tl;
    auto r = SimulateStep(b.model, b.t, b.l, b.cluster, {}, &low, &tl);
    REQUIRE(r.ok());
    return (r->peak_memory_bytes[stage] - low.static_bytes[stage]) / act;
  };
  CHECK(in_flight(kScheduleGpipe, 0) == doctest::Approx(16).epsilon(0.01));
  CHECK(in_flight(kSchedule1F1B, 0) == doctest::Approx(4).epsilon(0.01));
  CHECK(in_flight(kSchedule1F1B, 3) == doctest::Approx(1).epsilon(0.01));
  // The replayed 1F1B peak agrees with the memory planner's accounting.
  b.l.schedule = kSchedule1F1B;
  StepReport r = b.Run();
  for (int s = 0; s < 4; ++s) {
    CHECK(r.peak_memory_bytes[s] ==
          doctest::Approx(EstimateMemory(b.model, b.t, b.l, b.cluster).stages[s].total())
              .epsilon(0.01));
  }
}

TEST_CASE(
    "the memory planner's zero-bubble peaks are the replay's: the order walked, not bounded") {
  // ZB-H1 and ZB-H2 hold the micro-batches between F and B and the deferred W's inputs; the
  // planner once added the most of each (a 70B stage 4 GiB over the replay, and a sweep dropped
  // a faster layout that fits: Turing 530B's TP2+SP PP4 zb-h1, 139.6k against 125.8k tokens/s).
  Bench b(4);
  b.UniformStages();
  b.l.pp = 4;
  b.t.global_batch = 16;
  b.t.recompute = RecomputeKind::kSelective;
  for (const char* name : {"zb-h1", "zb-h2"}) {
    b.l.schedule = *FindSchedule(name);
    CAPTURE(name);
    const StepReport r = b.Run();
    const MemoryReport mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
    for (int s = 0; s < 4; ++s) {
      CAPTURE(s);
      CHECK(r.peak_memory_bytes[s] == doctest::Approx(mem.stages[s].total()).epsilon(0.01));
    }
  }
}

TEST_CASE("DP scaling of a fixed model flattens like Amdahl as communication grows") {
  Bench b(64, "gpt3-1.3b");
  b.cluster.inter = *b.hw.FindFabric("eth-100g");
  b.cluster.gpus_per_node = 1;
  b.t.global_batch = 64;
  double t1 = 0, prev_eff = 1.01;
  for (int n : {1, 2, 4, 8, 16, 32, 64}) {
    b.cluster.nodes = n;
    b.l.dp = n;
    const double step = b.Run().step_time_s;
    if (n == 1) t1 = step;
    const double eff = t1 / step / n;
    CHECK(eff <= prev_eff);
    prev_eff = eff;
  }
  CHECK(prev_eff < 0.9);   // flattening: 64 ranks give well under 64x
  CHECK(prev_eff > 0.05);  // but still speed up
}

TEST_CASE("coarse and op-level replays give the same step time") {
  struct Case {
    int tp, pp, dp, zero;
    ScheduleId sched;
    int v;
    RecomputeKind rc;
  };
  for (Case c : {Case{1, 1, 8, 0, kSchedule1F1B, 1, RecomputeKind::kNone},
                 Case{2, 2, 2, 1, kSchedule1F1B, 1, RecomputeKind::kFull},
                 Case{2, 2, 2, 0, kScheduleInterleaved, 2, RecomputeKind::kSelective},
                 Case{1, 1, 8, 3, kSchedule1F1B, 1, RecomputeKind::kNone},
                 Case{8, 1, 1, 0, kScheduleGpipe, 1, RecomputeKind::kNone}}) {
    Bench b(8);
    b.l.tp = c.tp;
    b.l.pp = c.pp;
    b.l.dp = c.dp;
    b.l.sp = c.tp > 1;
    b.l.zero = c.zero;
    b.l.schedule = c.sched;
    b.l.virtual_stages = c.v;
    b.t.recompute = c.rc;
    b.t.global_batch = 8 * c.dp;
    StepOptions op;
    op.granularity = Granularity::kOp;
    StepReport coarse = b.Run();
    StepReport fine = b.Run(op);
    CAPTURE(c.tp);
    CAPTURE(c.pp);
    CAPTURE(c.zero);
    CHECK(fine.tasks > 2 * coarse.tasks);
    // The host issues op by op in one and unit by unit in the other (each unit's first op gating
    // its GPU work), which where the step is nearly the host's moves it by up to 0.6%.
    CHECK(fine.step_time_s == doctest::Approx(coarse.step_time_s).epsilon(0.006));
    CHECK(fine.peak_memory_bytes[0] == doctest::Approx(coarse.peak_memory_bytes[0]).epsilon(0.01));
  }
}

// `b` replayed one replica per stage and every rank (--full): the same step. Returns both.
std::pair<StepReport, StepReport> SymmetricAndFull(Bench& b) {
  StepOptions full;
  full.full = true;
  StepReport sym = b.Run();
  StepReport all = b.Run(full);
  CHECK(all.tasks > 4 * sym.tasks);
  CHECK(all.step_time_s == doctest::Approx(sym.step_time_s).epsilon(0.001));
  return {sym, all};
}

TEST_CASE("--full (every rank) and the symmetric replay agree on a 2-node case") {
  Bench b(16);
  b.l.tp = 2;
  b.l.pp = 2;
  b.l.dp = 4;
  b.t.global_batch = 32;
  b.t.recompute = RecomputeKind::kSelective;
  for (int zero : {0, 1}) {
    b.l.zero = zero;
    const auto [sym, all] = SymmetricAndFull(b);
    CHECK(all.exposed.dp == doctest::Approx(sym.exposed.dp).epsilon(0.01));
  }
}

TEST_CASE("--full and the symmetric replay agree on a folded MoE layout (EP across TP, ETP1)") {
  Bench b(16, "mixtral-8x7b");
  b.l = Layout{.tp = 2, .pp = 2, .dp = 4, .ep = 8, .etp = 1, .sp = true, .zero = 1};
  b.t.global_batch = 32;
  b.t.recompute = RecomputeKind::kSelective;
  const auto [sym, all] = SymmetricAndFull(b);
  CHECK(all.exposed.ep == doctest::Approx(sym.exposed.ep).epsilon(0.01));
  CHECK(sym.exposed.ep > 0);
  // Unfolded (ETP2: EP4 inside the data-parallel ranks) the experts are half as wide per rank,
  // with a gather and a reduce-scatter over the TP pair around them.
  b.l.ep = 4;
  b.l.etp = 0;
  StepReport unfolded = b.Run();
  CHECK(unfolded.exposed.tp > sym.exposed.tp);
}

TEST_CASE("a layout on more GPUs than the cluster has is refused by the replay") {
  // A sweep scenario's own layout need not be valid alone (fuzzing found one that crashed `run`).
  Bench b(4);
  b.l.tp = 6;
  b.l.dp = 4;
  REQUIRE_FALSE(b.PlanError().empty());
  auto r = SimulateStep(b.model, b.t, b.l, b.cluster, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() ==
        "parallelism.dp: tp*pp*dp*cp = 6*1*4*1 = 24 GPUs, but the cluster has 4");
}

TEST_CASE("run's loss advice: a large vocabulary's unfused loss, replayed fused") {
  // Qwen3 30B-A3B's 152K-token vocabulary against its 2,048 hidden (3B parameters active): the
  // unfused loss's 52 bytes a logit are a few percent of a step on two A100 nodes.
  Bench b(16, "qwen3-30b-a3b");
  b.l.dp = 16;
  b.l.ep = 8;
  b.l.zero = 1;
  REQUIRE(b.PlanError().empty());
  const StepReport unfused = b.Run();
  REQUIRE(unfused.fits);
  const std::string advice = LossFusionAdvice(b.model, b.t, b.l, b.cluster, unfused);
  CAPTURE(advice);
  CHECK(advice.rfind("cross_entropy: fused also fits", 0) == 0);
  b.t.fused_cross_entropy = true;
  const StepReport fused = b.Run();
  CHECK(fused.step_time_s < 0.99 * unfused.step_time_s);
  CHECK(advice.find(fmt::format("step {:.3f} s", fused.step_time_s)) != std::string::npos);
  // Fused already: no advice.
  CHECK(LossFusionAdvice(b.model, b.t, b.l, b.cluster, fused).empty());
}

TEST_CASE("expert_gemm: per_expert: a MoE layer waits on the host issuing its experts") {
  // Qwen3 30B-A3B on 8 B200s, EP8: 16 local experts of 128, 48 MoE layers, 2 micro-batches a
  // GPU. The host issues every op of the step (strategies/host_ops.h); with an op time far
  // above any kernel's the step is the host's, the routed experts' GEMMs one a local expert
  // forward and two backward. The host's micro-batch and step times are left out here.
  Bench b(8, "qwen3-30b-a3b");
  b.Hardware("b200", "nvlink5", "ib-ndr-400g");
  b.cluster.gpu.host_micro_batch_time = Duration::Zero();
  b.cluster.gpu.host_step_time = Duration::Zero();
  b.cluster.gpu.host_op_time = Duration::Microseconds(0.001);
  b.l.dp = 8;
  b.l.ep = 8;
  b.l.zero = 1;
  b.t.seq_len = 4096;
  b.t.global_batch = 16;
  REQUIRE(b.PlanError().empty());
  const StepReport grouped = b.Run();
  REQUIRE(grouped.fits);
  b.t.per_expert_gemm = true;
  // Without a host wait, the experts' GEMMs four streams at a time (Transformer Engine's
  // multi-stream cuBLAS) fill the GPU less than one grouped GEMM of all their rows.
  const StepReport kernels_only = b.Run();
  CHECK(kernels_only.step_time_s > grouped.step_time_s);
  CHECK(kernels_only.step_time_s < 1.10 * grouped.step_time_s);
  // The routed experts' GEMMs a layer issues, counted from its op graph.
  const Block& moe = BuildModelGraph(b.model, RankShape(b.t, b.l)).moe;
  const double local = b.model.moe.experts / b.l.ep;
  double expert_ops = 0;
  for (size_t i = 0; i < moe.size(); ++i) {
    if (moe.op(i).expert && moe.op(i).kind == OpKind::kGemm) expert_ops += 3 * local;
  }
  const double h = 0.002;  // 2 ms an op
  b.cluster.gpu.host_op_time = Duration::Seconds(h);
  const StepReport host = b.Run();
  b.cluster.gpu.host_op_time = Duration::Seconds(2 * h);
  const StepReport slower = b.Run();
  CAPTURE(expert_ops);
  CAPTURE(host.step_time_s);

  // Every op is the host's: twice the op time, twice the time above the kernels.
  const double above = host.step_time_s - kernels_only.step_time_s;
  CHECK(slower.step_time_s - kernels_only.step_time_s == doctest::Approx(2 * above).epsilon(0.01));
  CHECK(host.step_time_s > 2.0 * b.model.layers * expert_ops * h);
  b.cluster.gpu.host_op_time = Duration::Seconds(h);  // the advice replays at host's op time
  const std::string advice = GroupedGemmAdvice(b.model, b.t, b.l, b.cluster, host);
  CAPTURE(advice);
  CHECK(advice.find("expert_gemm: grouped") != std::string::npos);
  // The default op time: the backward hides the host behind the GPU's kernels where they
  // outlast it, and the forward pays where the experts' issue after the synchronisation does.
  b.cluster.gpu.host_op_time = Duration::Microseconds(kDefaultHostOpTimeUs);
  const StepReport measured = b.Run();
  CHECK(measured.step_time_s > kernels_only.step_time_s);
  CHECK(measured.step_time_s < kernels_only.step_time_s + above * kDefaultHostOpTimeUs * 1e-6 / h);
  // FP8 adds a quantization a local expert to each expert GEMM's forward and backward.
  b.cluster.gpu.host_op_time = Duration::Seconds(h);
  b.t.precision = Dtype::kFp8;
  b.t.grad_dtype = Dtype::kBf16;
  const double casts = 2.0 * b.model.layers * 2 * (2 * local) * h;
  CHECK(b.Run().step_time_s - host.step_time_s > casts);
  b.t.precision = Dtype::kBf16;
  // Token dropping without padding synchronises too (Megatron-Core reads the dropped routing's
  // output size on the host before the permutation): the host issues the experts after it as
  // under dropless routing, the step a dropless one's but for the busiest rank's load capped
  // (it had been taken to run ahead, 16% faster at a capacity factor where nothing drops).
  b.model.moe.capacity_factor = 1.0;
  b.cluster.gpu.host_op_time = Duration::Microseconds(kDefaultHostOpTimeUs);
  const StepReport dropping = b.Run();
  b.cluster.gpu.host_op_time = Duration::Microseconds(0.001);
  CHECK(dropping.step_time_s > b.Run().step_time_s);
  CHECK(dropping.step_time_s > 0.9 * measured.step_time_s);
  CHECK(dropping.step_time_s <= measured.step_time_s);
  b.cluster.gpu.host_op_time = Duration::Microseconds(kDefaultHostOpTimeUs);
  CHECK_FALSE(GroupedGemmAdvice(b.model, b.t, b.l, b.cluster, dropping).empty());
  b.cluster.gpu.host_op_time = Duration::Microseconds(0.001);
  // Four local experts or fewer: one wave of streams, priced as the grouped GEMM.
  b.model.moe.capacity_factor = 0;
  b.model.moe.experts = 32;
  const StepReport four = b.Run();
  b.t.per_expert_gemm = false;
  CHECK(four.step_time_s == doctest::Approx(b.Run().step_time_s).epsilon(1e-6));
}

TEST_CASE("run's folding advice: an EP group that crosses nodes kept in one by etp: 1") {
  // 64 fine-grained experts on 2 H100 nodes, TP2 + SP, EP8 inside DP8: each EP group holds one
  // TP coordinate and spans both nodes (4 + 4). Folded, EP8 takes 8 consecutive ranks, one node.
  Bench b(16);
  b.FineGrainedMoe(4);
  b.l.tp = 2;
  b.l.dp = 8;
  b.l.sp = true;
  b.l.ep = 8;
  b.l.zero = 1;
  b.t.global_batch = 64;
  REQUIRE(b.PlanError().empty());
  const StepReport unfolded = b.Run();
  const std::string advice = FoldingAdvice(b.model, b.t, b.l, b.cluster, unfolded);
  CAPTURE(advice);
  CHECK(advice.rfind("etp: 1 with ep: 8 also fits", 0) == 0);
  b.l.etp = 1;
  const StepReport folded = b.Run();
  CHECK(folded.exposed.ep < unfolded.exposed.ep);
  CHECK(advice.find(fmt::format("step {:.3f} s", folded.step_time_s)) != std::string::npos);
  // Folded already, or experts as narrow as nothing to fold: no advice.
  CHECK(FoldingAdvice(b.model, b.t, b.l, b.cluster, folded).empty());
  b.l.etp = 0;
  b.l.tp = 1;
  b.l.dp = 16;
  b.l.sp = false;
  CHECK(FoldingAdvice(b.model, b.t, b.l, b.cluster, b.Run()).empty());
}

// The bytes a replay of the bench's step moves over all links.
double LinkBytes(const Bench& b) {
  LoweredStep low;
  sim::Timeline tl;
  REQUIRE(SimulateStep(b.model, b.t, b.l, b.cluster, {}, &low, &tl).ok());
  double total = 0;
  for (sim::LinkId k = 0; k < low.program.num_links(); ++k) total += tl.link_bytes[k];
  return total;
}

TEST_CASE("ZeRO-3 moves 1.5x the gradient-sync bytes of DDP (3P vs 2P)") {
  Bench b(16);
  b.OneGpuANode();
  b.l.dp = 16;
  b.t.global_batch = 16;  // one micro-batch: one gather per layer each way
  auto bytes = [&](int zero) {
    b.l.zero = zero;
    return LinkBytes(b);
  };
  const double ddp = bytes(0);
  CHECK(bytes(1) == doctest::Approx(ddp).epsilon(0.03));
  CHECK(bytes(3) == doctest::Approx(1.5 * ddp).epsilon(0.03));
}

TEST_CASE(
    "grad_reduce: ZeRO-2 reducing once per step moves ZeRO-1's bytes; DDP every micro-batch") {
  // Llama 2 7B on PP2 x DP4 over 2 nodes, 16 micro-batches per pipeline.
  Bench b(8);
  b.l.pp = 2;
  b.l.dp = 4;
  b.t.global_batch = 64;
  auto run = [&](int zero, Layout::GradReduce gr) {
    b.l.zero = zero;
    b.l.grad_reduce = gr;
    return b.Run();
  };
  auto link_bytes = [&](int zero, Layout::GradReduce gr) {
    b.l.zero = zero;
    b.l.grad_reduce = gr;
    return LinkBytes(b);
  };
  using GR = Layout::GradReduce;
  const StepReport z1 = run(1, GR::kAuto), z2 = run(2, GR::kAuto), z2_step = run(2, GR::kStep);
  // DeepSpeed/FSDP's ZeRO-2 reduce-scatters every micro-batch (16 per step, hidden behind the
  // backwards but for the last): more traffic on the links, a longer step.
  CHECK(z2.step_time_s > z1.step_time_s);
  CHECK(link_bytes(2, GR::kAuto) > 4 * link_bytes(1, GR::kAuto));
  CHECK(link_bytes(2, GR::kStep) == doctest::Approx(link_bytes(1, GR::kAuto)).epsilon(1e-9));
  // Under no_sync it keeps whole gradients and reduces once: ZeRO-1's bytes and memory exactly,
  // and about its step (ZeRO-1, Megatron-Core's distributed optimizer, buckets only stage 0's
  // first chunk and chains its start gathers: DataParallelLowering::WaitStartGather).
  CHECK(z2_step.step_time_s == doctest::Approx(z1.step_time_s).epsilon(0.01));
  CHECK(z2_step.peak_memory_bytes == z1.peak_memory_bytes);
  CHECK(z2.peak_memory_bytes[0] < z1.peak_memory_bytes[0]);
  // `run`'s advice: ZeRO-2 reducing every micro-batch fits, and so does once per step, faster.
  b.l.zero = 2;
  b.l.grad_reduce = GR::kAuto;
  const std::string advice = GradReduceAdvice(b.model, b.t, b.l, b.cluster, z2);
  CHECK(advice.rfind("grad_reduce: step also fits", 0) == 0);
  CHECK(advice.find(fmt::format("step {:.3f} s", z2_step.step_time_s)) != std::string::npos);
  b.l.zero = 1;
  CHECK(GradReduceAdvice(b.model, b.t, b.l, b.cluster, z1).empty());  // reduces once already
  // DDP without no_sync all-reduces every micro-batch's gradients.
  const StepReport ddp = run(0, GR::kAuto), ddp_every = run(0, GR::kMicroBatch);
  CHECK(ddp_every.step_time_s > ddp.step_time_s);
  CHECK(ddp_every.peak_memory_bytes == ddp.peak_memory_bytes);
}

TEST_CASE("grad_accumulation: separate adds one pass over the gradients per micro-batch") {
  // Llama 2 7B on one A100, 8 micro-batches of 2K tokens, bf16 with fp32 gradients. A separate
  // accumulation reads each weight gradient (2 B) and reads and writes the fp32 sum (8 B) after
  // every micro-batch's backward (Megatron-LM 2021's `main_grad.add_`): 10 B a parameter, at
  // the HBM rate a memory-bound kernel gets in the step. The weight-gradient GEMM that
  // accumulates itself (fused, the default) adds nothing.
  Bench b(1);
  b.t.precision = Dtype::kBf16;
  b.t.grad_dtype = Dtype::kFp32;
  b.t.global_batch = 8;
  b.t.recompute = RecomputeKind::kFull;
  const StepReport fused = b.Run();
  b.t.grad_accumulation = GradAccumulation::kSeparate;
  const StepReport separate = b.Run();
  const double params = CountParams(b.model).total;
  const CostModel cm(b.cluster, b.t.precision);
  const double pass = cm.MemoryTime(Bytes(10 * params)).seconds();
  MESSAGE("fused ", fused.step_time_s, " s, separate ", separate.step_time_s, " s, one pass ",
          pass * 1e3, " ms");
  // Every op's pass carries a kernel launch too (a few microseconds each).
  CHECK((separate.step_time_s - fused.step_time_s) / 8 == doctest::Approx(pass).epsilon(0.02));
  CHECK(separate.peak_memory_bytes == fused.peak_memory_bytes);

  // ZeRO-2 reducing every micro-batch keeps only the shard: its pass adds the reduce-scatter's
  // fp32 shard to the accumulated one (read both, write one: 12 B a parameter over DP).
  Bench z(8);
  z.t = b.t;
  z.l.dp = 8;
  z.l.zero = 2;
  z.t.global_batch = 64;
  z.t.grad_accumulation = GradAccumulation::kFused;
  const StepReport z_fused = z.Run();
  z.t.grad_accumulation = GradAccumulation::kSeparate;
  const StepReport z_separate = z.Run();
  const double shard_pass = cm.MemoryTime(Bytes(12 * params / 8)).seconds();
  CHECK((z_separate.step_time_s - z_fused.step_time_s) / 8 ==
        doctest::Approx(shard_pass).epsilon(0.1));
  CHECK(z_separate.step_time_s - z_fused.step_time_s <
        0.2 * (separate.step_time_s - fused.step_time_s));
}

TEST_CASE("ZeRO-2 without a pipeline: each backward waits for its micro-batch's reductions") {
  // Llama 2 7B at 512 tokens on DP4 over four single-GPU nodes (25 GB/s each): a micro-batch's
  // gradients take longer to reduce-scatter than its backward takes to produce them. DeepSpeed
  // and FSDP end every backward waiting for its reductions, so no reduction runs beside the
  // next micro-batch's forward; queued one behind another, they would.
  Bench b(4);
  b.OneGpuANode();
  b.l.dp = 4;
  b.l.zero = 2;
  b.t.seq_len = 512;
  b.t.global_batch = 16;  // 4 micro-batches
  b.t.recompute = RecomputeKind::kNone;
  auto overlap = [&](TaskCat with) {
    LoweredStep low;
    sim::Timeline tl;
    auto r = SimulateStep(b.model, b.t, b.l, b.cluster, {}, &low, &tl);
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    const sim::Program& p = low.program;
    std::vector<std::pair<int64_t, int64_t>> reduces, others;
    for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
      const auto span = std::make_pair(tl.start[t].picoseconds(), tl.end[t].picoseconds());
      if (p.category(t) == static_cast<uint8_t>(TaskCat::kDp) &&
          p.stream_name(p.stream(t)) == "dp-reduce") {
        reduces.push_back(span);
      }
      if (p.category(t) == static_cast<uint8_t>(with)) others.push_back(span);
    }
    REQUIRE(reduces.size() > 4);
    double seconds = 0;
    for (auto [a0, a1] : reduces) {
      for (auto [b0, b1] : others) {
        seconds += static_cast<double>(std::max<int64_t>(0, std::min(a1, b1) - std::max(a0, b0)));
      }
    }
    return seconds * 1e-12;
  };
  CHECK(overlap(TaskCat::kBackward) > 0.05);  // the reductions still hide behind backwards
  CHECK(overlap(TaskCat::kForward) == 0);
  b.l.pp = 2;
  b.l.dp = 2;
  CHECK(overlap(TaskCat::kForward) > 0.05);  // under a pipeline they run on (Llama 3)
}

TEST_CASE(
    "ZeRO 2 and 3 without overlap: each reduction blocks the compute after it, micro-batch "
    "by micro-batch") {
  // A rank keeps only its shard of a micro-batch's gradients, so without overlap the
  // reduce-scatter still runs when that backward is done, and the compute stream waits for it.
  // (They were held to the pipeline flush, as ZeRO 0 and 1 hold theirs, with the memory of a
  // shard: time and memory of two schemes, and at one micro-batch faster than with overlap.)
  for (int zero : {2, 3}) {
    CAPTURE(zero);
    Bench b(4);
    b.OneGpuANode();
    b.l.pp = 2;
    b.l.dp = 2;
    b.l.zero = zero;
    b.l.overlap_dp = false;
    b.t.seq_len = 512;
    b.t.global_batch = 8;  // 4 micro-batches
    LoweredStep low;
    sim::Timeline tl;
    auto r = SimulateStep(b.model, b.t, b.l, b.cluster, {}, &low, &tl);
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    const sim::Program& p = low.program;
    int64_t first_reduce_end = -1, last_forward_start = -1;
    size_t reduces = 0;
    for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
      const auto span = std::make_pair(tl.start[t].picoseconds(), tl.end[t].picoseconds());
      const auto cat = static_cast<TaskCat>(p.category(t));
      if (cat == TaskCat::kDp && p.stream_name(p.stream(t)) == "dp-reduce") {
        ++reduces;
        if (first_reduce_end < 0 || span.second < first_reduce_end) first_reduce_end = span.second;
      }
      if (cat == TaskCat::kForward) last_forward_start = std::max(last_forward_start, span.first);
    }
    REQUIRE(reduces >= 4);
    CHECK(first_reduce_end < last_forward_start);  // not held to the flush
    b.l.overlap_dp = true;
    const StepReport with = b.Run();
    CHECK(r->step_time_s >= with.step_time_s);  // waiting is never faster than overlapping
  }
}

// A replayed step's data-parallel gathers and reductions per stream (one flow a bucket and
// data-parallel group, on its first member's stream), and which gathers were issued beside a
// forward (after a compute-stream task) rather than at the step start.
struct DpFlows {
  LoweredStep low;
  sim::Timeline tl;
  std::map<sim::StreamId, std::vector<sim::TaskId>> gathers, reduces;
  std::set<sim::TaskId> after_compute;
  std::map<sim::TaskId, sim::TaskId> compute_pred;  // a gather's last compute-stream predecessor
  // The compute-stream task that waited for gather `t`.
  sim::TaskId Consumer(sim::TaskId t) const {
    sim::TaskId c = sim::kNone;
    for (sim::TaskId s : low.program.successors(t)) {
      if (low.program.stream_name(low.program.stream(s)) == "compute") c = s;
    }
    return c;
  }
  std::vector<size_t> Counts(const std::map<sim::StreamId, std::vector<sim::TaskId>>& m) const {
    std::vector<size_t> n;
    for (const auto& [stream, tasks] : m) n.push_back(tasks.size());
    std::sort(n.begin(), n.end());
    return n;
  }
};

std::unique_ptr<DpFlows> ReplayDpFlows(const Bench& b) {
  auto f = std::make_unique<DpFlows>();
  auto r = SimulateStep(b.model, b.t, b.l, b.cluster, {}, &f->low, &f->tl);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const sim::Program& p = f->low.program;
  for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
    const std::string stream(p.stream_name(p.stream(t)));
    if (stream == "compute") {
      for (sim::TaskId s : p.successors(t)) {
        f->after_compute.insert(s);
        f->compute_pred[s] = std::max(f->compute_pred[s], t);
      }
    }
    if (p.category(t) != static_cast<uint8_t>(TaskCat::kDp)) continue;
    if (stream == "dp-gather") f->gathers[p.stream(t)].push_back(t);
    if (stream == "dp-reduce") f->reduces[p.stream(t)].push_back(t);
  }
  return f;
}

TEST_CASE("Megatron's distributed optimizer: its buckets, and its start gathers by version") {
  // Llama 2 7B on PP2 x DP4, one GPU a node (data parallelism over InfiniBand). Megatron-Core
  // buckets only pipeline rank 0's first model chunk; every other chunk is one bucket.
  Bench b(8);
  b.OneGpuANode();
  b.l.pp = 2;
  b.l.dp = 4;
  b.l.zero = 1;
  b.t.global_batch = 16;
  using PG = Layout::ParamGather;
  {
    // 1F1B, on demand (Megatron-Core 0.9 on): stage 1 reduces and gathers one bucket; each
    // stage's first bucket is gathered when its first forward is otherwise ready (stage 1's
    // after its input has arrived), and waited for.
    const auto f = ReplayDpFlows(b);
    REQUIRE(f->reduces.size() == 2);
    const std::vector<size_t> counts = f->Counts(f->reduces);
    CHECK(counts[0] == 1);
    CHECK(counts[1] > 3);
    CHECK(f->Counts(f->gathers) == counts);  // gathered and reduced by the same buckets
    for (const auto& [stream, tasks] : f->gathers) {
      for (sim::TaskId t : tasks) CHECK(f->after_compute.count(t) == 1);
      const sim::TaskId first = f->Consumer(tasks.front());
      REQUIRE(first != sim::kNone);
      CHECK(f->tl.start[first] >= f->tl.end[tasks.front()]);
      if (tasks.size() == 1) CHECK(f->tl.start[tasks.front()] > Duration::Zero());  // stage 1
    }
    // Without overlap every chunk is one bucket, stage 0's too.
    b.l.overlap_dp = false;
    const auto plain = ReplayDpFlows(b);
    CHECK(plain->Counts(plain->reduces) == std::vector<size_t>{1, 1});
    b.l.overlap_dp = true;
  }
  b.l.schedule = kScheduleInterleaved;
  b.l.virtual_stages = 2;
  {
    // Chained (Megatron-Core 0.8): the first at the step start, each next one issued beside the
    // first forward of the bucket before it: after what that forward waits for, no later than
    // it starts, across the model chunks.
    b.l.param_gather = PG::kChained;
    const auto f = ReplayDpFlows(b);
    const std::vector<size_t> counts = f->Counts(f->gathers);
    CHECK(counts[0] == 2);  // stage 1: one bucket a chunk
    CHECK(counts[1] > 3);   // stage 0: its first chunk's buckets, then one
    int at_start = 0;
    for (const auto& [stream, tasks] : f->gathers) {
      at_start += f->after_compute.count(tasks.front()) == 0;
      for (size_t i = 1; i < tasks.size(); ++i) {
        CAPTURE(i);
        CHECK(f->after_compute.count(tasks[i]) == 1);
        const sim::TaskId before = f->Consumer(tasks[i - 1]);
        REQUIRE(before != sim::kNone);
        CHECK(f->tl.start[tasks[i]] <= f->tl.start[before]);  // beside it, not after it
        CHECK(f->tl.start[tasks[i]] >= f->tl.end[tasks[i - 1]]);
      }
    }
    CHECK(at_start == 2);
  }
  {
    // Aligned (Megatron-Core 0.9 on, interleaved): chunks 0 and 1 whole at the step start,
    // chunk k >= 2 whole at the stage's forward number (k - 1) g - stage (g the micro-batch
    // group, pp by default), ahead of its use.
    b.l.param_gather = PG::kAuto;
    b.l.virtual_stages = 4;
    b.t.global_batch = 32;  // 8 micro-batches
    REQUIRE(b.l.param_gather_resolved() == PG::kAligned);
    const auto f = ReplayDpFlows(b);
    const std::vector<size_t> counts = f->Counts(f->gathers);
    CHECK(counts[0] == 4);
    for (const auto& [stream, tasks] : f->gathers) {
      const size_t later = 2;  // chunks 2 and 3, one bucket each, issued last
      for (size_t i = 0; i < tasks.size(); ++i) {
        CAPTURE(i);
        const bool beside = i + later >= tasks.size();
        CHECK(f->after_compute.count(tasks[i]) == (beside ? 1u : 0u));
        const sim::TaskId use = f->Consumer(tasks[i]);
        REQUIRE(use != sim::kNone);
        if (beside) CHECK(f->tl.start[tasks[i]] < f->tl.start[use]);
      }
    }
    // Issued forwards ahead of their use (the compute tasks between); on demand, beside the use
    // (at most the task that issues its input between).
    auto lead = [](const DpFlows& x, sim::TaskId g) {
      const sim::Program& p = x.low.program;
      const sim::TaskId use = x.Consumer(g), pred = x.compute_pred.at(g);
      int between = 0;
      for (sim::TaskId t = pred + 1; t < use; ++t) between += p.stream(t) == p.stream(use);
      return between;
    };
    // Exactly: before forward (k - 1) g - s, used at forward k g: g + s forwards between (one
    // compute task each here, past stage 0's first chunk, all in the warm-up). Stage 1 has one
    // bucket a chunk, stage 0 more.
    auto leads = [&](const DpFlows& x, int g) {
      for (const auto& [stream, tasks] : x.gathers) {
        const int stage = tasks.size() == 4 ? 1 : 0;
        CAPTURE(stage);
        for (size_t i = tasks.size() - 2; i < tasks.size(); ++i) {
          CHECK(lead(x, tasks[i]) == g + stage);
        }
      }
    };
    leads(*f, b.l.pp);
    // In micro-batch groups of 3 (Megatron-Core's --microbatch-group-size-per-virtual-pipeline-
    // stage), the table's chunks come 3 forwards apart.
    b.l.microbatch_group = 3;
    leads(*ReplayDpFlows(b), 3);
    b.l.microbatch_group = 0;
    b.l.param_gather = PG::kOnDemand;
    const auto late = ReplayDpFlows(b);
    for (const auto& [stream, tasks] : late->gathers) {
      for (sim::TaskId g : tasks) CHECK(lead(*late, g) <= 1);
    }
  }
  // ZeRO 2 (DeepSpeed, FSDP) buckets every chunk and issues every start gather at the step start.
  b.l.zero = 2;
  b.l.grad_reduce = Layout::GradReduce::kStep;
  const auto z2 = ReplayDpFlows(b);
  for (const auto& [stream, tasks] : z2->gathers) {
    CHECK(tasks.size() > 4);
    for (sim::TaskId t : tasks) CHECK(z2->after_compute.count(t) == 0);
  }
}

TEST_CASE("ZeRO 3 as FSDP2 runs it: copy-out after each gather, one gather ahead, copy-in") {
  // Llama 2 7B at 512 tokens on DP8 (one node), 4 micro-batches, bf16 with fp32 reduction.
  // FSDP2 copies each gathered layer out of the all-gather buffer on the compute stream (its
  // 16-bit parameters read and written), starts the next gather once that copy is done, and
  // copies each layer's gradients into the reduce-scatter's fp32 buffer (2 + 4 bytes each).
  Bench b(8);
  b.l.dp = 8;
  b.l.zero = 3;
  b.t.seq_len = 512;
  b.t.global_batch = 32;
  b.t.precision = Dtype::kBf16;
  b.t.grad_dtype = Dtype::kFp32;
  b.t.recompute = RecomputeKind::kNone;
  LoweredStep low;
  sim::Timeline tl;
  auto r = SimulateStep(b.model, b.t, b.l, b.cluster, {}, &low, &tl);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const sim::Program& p = low.program;
  std::vector<sim::TaskId> gathers, copies_out, copies_in;
  for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
    const std::string stream(p.stream_name(p.stream(t)));
    if (p.category(t) == static_cast<uint8_t>(TaskCat::kDp) && stream == "dp-gather") {
      gathers.push_back(t);
    }
    if (p.category(t) != static_cast<uint8_t>(TaskCat::kDpCopy)) continue;
    if (stream == "compute") copies_out.push_back(t);
    if (stream == "dp-reduce") copies_in.push_back(t);
  }
  REQUIRE(gathers.size() > 8);
  REQUIRE(copies_out.size() == gathers.size());
  for (size_t i = 0; i < gathers.size(); ++i) {
    CHECK(tl.start[copies_out[i]] >= tl.end[gathers[i]]);
    if (i == 0) continue;
    // One gather ahead: the next waits for the copy-out before it.
    const auto next = p.successors(copies_out[i - 1]);
    CHECK(std::find(next.begin(), next.end(), gathers[i]) != next.end());
    CHECK(tl.start[gathers[i]] >= tl.end[copies_out[i - 1]]);
  }
  // A transformer layer's copies, at the memory-bound rate (a copy-out beside a reduction runs
  // at the contended rate, up to 1.06x): one out per layer, forward and backward, of each
  // micro-batch, and one in per layer and micro-batch.
  const double params = BlockParams(SharedModelGraph(b.model, RankShape(b.t, b.l))->dense);
  const CostModel cm(b.cluster, b.t.precision);
  const double out = (cm.MemoryTime(Bytes(4 * params)) + cm.Launch()).seconds();
  const double in = (cm.MemoryTime(Bytes(6 * params)) + cm.Launch()).seconds();
  auto count = [&](const std::vector<sim::TaskId>& tasks, double want, double slack) {
    int n = 0;
    for (sim::TaskId t : tasks) {
      const double d = (tl.end[t] - tl.start[t]).seconds();
      n += d >= want * (1 - 1e-9) && d <= want * slack;
    }
    return n;
  };
  const int layers = static_cast<int>(b.model.layers), m = 4;
  CHECK(count(copies_out, out, 1.07) == 2 * layers * m);
  CHECK(count(copies_in, in, 1 + 1e-9) == layers * m);
  CHECK(r->exposed.dp > 0);
  // Flat buffers (FSDP1, Megatron-Core's FSDP): no copies, and a shorter step.
  b.l.zero3_copies = false;
  LoweredStep flat;
  auto f = SimulateStep(b.model, b.t, b.l, b.cluster, {}, &flat, nullptr);
  REQUIRE_MESSAGE(f.ok(), f.status().message());
  sim::Timeline ftl;
  f = SimulateStep(b.model, b.t, b.l, b.cluster, {}, &flat, &ftl);
  REQUIRE_MESSAGE(f.ok(), f.status().message());
  const sim::Program& fp = flat.program;
  std::vector<sim::TaskId> flat_gathers;
  for (sim::TaskId t = 0; t < fp.num_tasks(); ++t) {
    CHECK(fp.category(t) != static_cast<uint8_t>(TaskCat::kDpCopy));
    if (fp.category(t) == static_cast<uint8_t>(TaskCat::kDp) &&
        fp.stream_name(fp.stream(t)) == "dp-gather") {
      flat_gathers.push_back(t);
    }
  }
  REQUIRE(flat_gathers.size() == gathers.size());
  // FSDP1's rate limiter: two gathered units at most. A gather starts once the compute that
  // waited for the gather two before it is done (not all at the start of the step).
  for (size_t i = 2; i < flat_gathers.size(); ++i) {
    CAPTURE(i);
    sim::TaskId consumer = sim::kNone;
    for (sim::TaskId s : fp.successors(flat_gathers[i - 2])) {
      if (fp.stream_name(fp.stream(s)) == "compute") consumer = s;
    }
    REQUIRE(consumer != sim::kNone);
    CHECK(ftl.start[flat_gathers[i]] >= ftl.end[consumer]);
  }
  CHECK(f->step_time_s < r->step_time_s);
}

TEST_CASE("zero3_reshard: layers freed after each forward, after each backward, or at the end") {
  // Llama 2 7B at 512 tokens, 4 micro-batches: FSDP2 gathers each layer before every forward
  // and backward (reshard_after_forward), before every forward (held to its backward), or once
  // a step (held to the step's end, as torch.distributed.pipelining runs it under PP).
  Bench b(8);
  b.l.dp = 4;
  b.l.pp = 2;
  b.l.zero = 3;
  b.t.seq_len = 512;
  b.t.global_batch = 16;
  b.t.recompute = RecomputeKind::kNone;
  auto gathers = [&](Layout::Zero3Reshard r, StepReport* out) {
    b.l.zero3_reshard = r;
    LoweredStep low;
    auto rep = SimulateStep(b.model, b.t, b.l, b.cluster, {}, &low, nullptr);
    REQUIRE_MESSAGE(rep.ok(), rep.status().message());
    *out = *rep;
    const sim::Program& p = low.program;
    int n = 0;
    for (sim::TaskId t = 0; t < p.num_tasks(); ++t) {
      n += p.category(t) == static_cast<uint8_t>(TaskCat::kDp) &&
           p.stream_name(p.stream(t)) == "dp-gather";
    }
    return n;
  };
  StepReport fwd, bwd, step;
  const int per_forward = gathers(Layout::Zero3Reshard::kForward, &fwd);
  const int per_backward = gathers(Layout::Zero3Reshard::kBackward, &bwd);
  const int once = gathers(Layout::Zero3Reshard::kStep, &step);
  // Each layer (and each table) of each stage's replicas: 2 m gathers, m, and 1.
  const int m = 4;
  REQUIRE(once > 0);
  CHECK(per_forward == 2 * m * once);
  CHECK(per_backward == m * once);
  // Fewer gathers, less exposed data-parallel time and a shorter step; more memory held.
  CHECK(step.exposed.dp < bwd.exposed.dp);
  CHECK(bwd.exposed.dp < fwd.exposed.dp);
  CHECK(step.step_time_s < fwd.step_time_s);
  CHECK(step.peak_memory_bytes[0] > fwd.peak_memory_bytes[0]);
  // run's advice names the shortest policy that holds longer and still fits.
  b.l.zero3_reshard = Layout::Zero3Reshard::kForward;
  const std::string advice = Zero3ReshardAdvice(b.model, b.t, b.l, b.cluster, fwd);
  CAPTURE(advice);
  CHECK(advice.rfind("zero3_reshard: step also fits", 0) == 0);
  CHECK(advice.find(fmt::format("step {:.3f} s", step.step_time_s)) != std::string::npos);
  b.l.zero3_reshard = Layout::Zero3Reshard::kStep;
  CHECK(Zero3ReshardAdvice(b.model, b.t, b.l, b.cluster, step).empty());
}

TEST_CASE("cp_comm: all-gathered K/V wait before the attention; a ring hides them behind it") {
  // Llama 3 8B at 32K tokens on CP4 across four single-GPU nodes (GQA: K and V of 8 heads).
  Bench b(4, "llama3-8b");
  b.OneGpuANode();
  b.l.cp = 4;
  b.t.seq_len = 32768;
  b.t.global_batch = 2;
  b.t.recompute = RecomputeKind::kNone;
  auto run = [&](Layout::CpComm c) {
    b.l.cp_comm = c;
    return b.Run();
  };
  const StepReport ring = run(Layout::CpComm::kRing), gathered = run(Layout::CpComm::kAllGather);
  // The ring's blocks arrive while the attention of the block before runs, and only what the
  // 25 GB/s NICs do not finish by then waits. Gathered, the exchange runs before the attention
  // and nothing hides it: the forward's all-gather, and in the backward a second all-gather
  // and the gradients' reduce-scatter.
  CHECK(ring.exposed.cp < 0.5 * gathered.exposed.cp);
  CHECK(gathered.step_time_s > ring.step_time_s);
  // What the ring's blocks slow of the attention beside them is compute, what outlasts it
  // exposed: the two steps differ by the exposed CP and the compute between them.
  CHECK(gathered.step_time_s - ring.step_time_s ==
        doctest::Approx(gathered.exposed.cp - ring.exposed.cp + gathered.stage_compute_s[0] -
                        ring.stage_compute_s[0])
            .epsilon(0.05));
  CHECK(ring.stage_compute_s[0] > gathered.stage_compute_s[0]);
  // Same memory: the gathered K and V are transient.
  CHECK(gathered.peak_memory_bytes == ring.peak_memory_bytes);
}

TEST_CASE("a data-parallel gradient sync of a fixed shard barely grows from 64 to 4096 ranks") {
  // Llama 3 70B's layers cut to 44 under TP8: 4.9B parameters, 10 GB of bf16 gradients per GPU,
  // reduce-scattered and all-gathered (ZeRO-1) in the layout's buckets after one micro-batch,
  // not overlapped, on H100 nodes with a full-bisection fabric. Per GPU, a bandwidth-optimal
  // reduce-scatter and all-gather move (n-1)/n of the shard whatever n is.
  Bench b(8, "llama3-70b");
  b.Hardware("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g");
  b.model.layers = 44;
  b.l.tp = 8;
  b.l.zero = 1;
  b.l.overlap_dp = false;
  b.t.seq_len = 1024;
  auto sync = [&](int64_t dp, Bytes bucket) {
    b.cluster.nodes = dp;
    b.l.dp = dp;
    b.l.bucket = bucket;
    b.t.global_batch = dp;
    const StepReport r = b.Run();
    return r.exposed.dp;
  };
  for (Bytes bucket : {Bytes(0), Bytes::MiB(25)}) {  // Megatron-Core's buckets, DDP's
    CAPTURE(bucket.bytes());
    const double narrow = sync(64, bucket), wide = sync(4096, bucket);
    CHECK(narrow > 0.2);  // about 2 x 10 GB at a 48.5 GB/s NIC share
    CHECK(wide <= 1.10 * narrow);
  }
}

TEST_CASE("a TP group across nodes pays the inter-node price and is warned about") {
  Bench b(16);
  b.l.tp = 16;
  b.t.global_batch = 4;
  StepReport across = b.Run();
  CHECK(HasWarning(across, "spans nodes"));
  b.l.tp = 8;
  b.l.dp = 2;
  b.t.global_batch = 4;
  StepReport within = b.Run();
  CHECK_FALSE(HasWarning(within, "spans nodes"));
  CHECK(across.exposed.tp > 2 * within.exposed.tp);
  // A TP within a node's size that the rank order spreads over nodes: the order is the fix
  // (a review: "keep tp <= 8" had been advised to a TP2).
  b.l.tp = 2;
  b.l.dp = 8;
  b.t.global_batch = 8;
  b.l.order = {RankDim::kDp, RankDim::kTp, RankDim::kCp, RankDim::kEp, RankDim::kPp};
  StepReport ordered = b.Run();
  CHECK(HasWarning(ordered, "put tp first in parallelism.order"));
  CHECK_FALSE(HasWarning(ordered, "keep tp <="));
}

TEST_CASE("GB200 NVL72: TP and EP groups larger than a tray stay on NVLink inside the domain") {
  // 72 GPUs in trays of 4 on one NVLink5 fabric (cluster.nvlink_domain: 72), against the same
  // trays as separate nodes that talk over their NICs.
  Bench b(8, "llama3-70b");
  b.Hardware("gb200", "nvlink5", "ib-ndr-400g");
  b.cluster.gpus_per_node = 4;
  b.cluster.nodes = 18;
  b.l.tp = 16;
  b.l.dp = 4;
  b.l.pp = 1;
  b.l.sp = true;
  b.t.global_batch = 16;
  b.cluster.nvlink_domain = 72;
  const GroupPlacement in_domain = Placement(b.l, b.cluster).Group(GroupKind::kTp);
  CHECK(in_domain.size == 16);
  CHECK(in_domain.per_node == 16);  // one NVLink domain: priced on the intra-node fabric
  const StepReport rack = b.Run();
  CHECK_FALSE(HasWarning(rack, "spans"));
  b.cluster.nvlink_domain = 0;  // trays of 4 on their own
  const GroupPlacement trays = Placement(b.l, b.cluster).Group(GroupKind::kTp);
  CHECK(trays.per_node == 4);
  const StepReport separate = b.Run();
  CHECK(HasWarning(separate, "spans nodes"));
  CHECK(separate.exposed.tp > 3 * rack.exposed.tp);
  CHECK(separate.step_time_s > rack.step_time_s);
  // The cost model prices the same 16-GPU all-reduce on NVLink5 inside the domain and on the
  // NICs across trays.
  CostModel cm(b.cluster, Dtype::kBf16);
  const auto nvl = cm.CollectiveTime(Collective::kAllReduce, Bytes::GB(1), in_domain);
  const auto nic = cm.CollectiveTime(Collective::kAllReduce, Bytes::GB(1), trays);
  CHECK_FALSE(nvl.inter_node);
  CHECK(nic.inter_node);
  CHECK(nic.time > nvl.time * 3);
  // The same 16-GPU group on 8-GPU nodes (HGX B200 style, no larger domain) pays the NICs too.
  ClusterSpec hgx = b.cluster;
  hgx.gpus_per_node = 8;
  hgx.nodes = 9;
  const GroupPlacement eights = Placement(b.l, hgx).Group(GroupKind::kTp);
  CHECK(eights.per_node == 8);
  CHECK(CostModel(hgx, Dtype::kBf16)
            .CollectiveTime(Collective::kAllReduce, Bytes::GB(1), eights)
            .inter_node);

  SUBCASE("an expert-parallel group of 32 inside the rack") {
    Bench m(8, "mixtral-8x7b");
    m.cluster = b.cluster;
    m.cluster.nvlink_domain = 72;
    m.l.ep = 8;
    m.l.dp = 32;
    m.l.tp = 2;
    const GroupPlacement ep = Placement(m.l, m.cluster).Group(GroupKind::kEp);
    CHECK(ep.size == 8);
    CHECK(ep.per_node == 8);
    m.cluster.nvlink_domain = 0;
    CHECK(Placement(m.l, m.cluster).Group(GroupKind::kEp).per_node == 2);
  }
}

TEST_CASE(
    "node-limited routing halves the replayed EP all-to-all across nodes (DeepSeek-V3's M=4)") {
  // A fine-grained MoE (top 8 of 64 experts) with EP32 over 4 H100 nodes: a token's 8 experts
  // fall on about 3.6 distinct nodes, so sending it once to at most 2 of them carries 2/8 of
  // the routed copies over the network.
  Bench b(32);
  b.FineGrainedMoe(4);
  b.l.ep = 32;
  b.l.dp = 32;
  b.t.global_batch = 32;
  const StepReport open = b.Run();
  b.model.moe.node_limit = 2;
  const StepReport limited = b.Run();
  REQUIRE(open.exposed.ep > 0);
  CHECK(limited.exposed.ep < 0.4 * open.exposed.ep);
  CHECK(limited.exposed.ep > 0.1 * open.exposed.ep);
  CHECK(limited.step_time_s < open.step_time_s);
}

TEST_CASE("overlap.ep: each micro-batch's all-to-alls beside another's compute, outside DualPipe") {
  // Megatron-Core's overlap_moe_expert_parallel_comm. A fine-grained MoE with EP16 across two
  // H100 nodes: one stage runs F0, (F1, B0), ..., B(m-1); on four interleaved stages the steady
  // state's forward pairs with the backward after it.
  Bench b(16);
  b.FineGrainedMoe(8);
  b.l.ep = 16;
  b.l.dp = 16;
  b.t.global_batch = 16 * 8;
  const StepReport apart = b.Run();
  const MemoryReport apart_mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  b.l.overlap_ep = true;
  REQUIRE(b.PlanError().empty());
  const std::vector<Unit> order = LayoutOrders(b.l, {1, 1, 8})[0];
  REQUIRE(order.size() == 16);
  CHECK(order[1].pair);
  CHECK(order[1].mb == 1);
  CHECK(order[2].phase == Phase::kB);
  CHECK(order[2].mb == 0);
  const StepReport paired = b.Run();
  const MemoryReport paired_mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  REQUIRE(apart.exposed.ep > 0);
  CHECK(paired.exposed.ep < 0.6 * apart.exposed.ep);
  CHECK(paired.step_time_s < apart.step_time_s);
  // Two micro-batches in flight instead of one, in the plan and in the replay.
  CHECK(paired_mem.stages[0].in_flight == 2);
  CHECK(apart_mem.stages[0].in_flight == 1);
  CHECK(paired.peak_memory_bytes[0] <= 1.02 * paired_mem.stages[0].total());
  CHECK(paired.peak_memory_bytes[0] > apart.peak_memory_bytes[0]);
  // Pipelined: interleaved 1F1B on 4 stages (Megatron asks for virtual stages with PP).
  Bench q = b;
  q.cluster.nodes = 8;
  q.l.pp = 4;
  q.l.schedule = kScheduleInterleaved;
  q.l.virtual_stages = 2;
  q.model.layers = 32;  // four layers a chunk: the pairs' first and last pieces matter less
  q.l.overlap_ep = false;
  const StepReport q_apart = q.Run();
  q.l.overlap_ep = true;
  const StepReport q_paired = q.Run();
  CHECK(q_paired.exposed.ep < 0.8 * q_apart.exposed.ep);
  CHECK(q_paired.step_time_s < q_apart.step_time_s);
  // Under a pipeline Megatron-Core pairs only with virtual stages: plain 1F1B, GPipe and the
  // zero-bubble schedules are refused (a 1F1B stage's pair held the next stage's forward behind
  // its backward: 22.8 s a step against 12.3 s unpaired on the Mixtral example at PP2).
  for (const char* name : {"1f1b", "gpipe", "zb-h1"}) {
    CAPTURE(name);
    Bench g = q;
    g.l.schedule = *FindSchedule(name);
    g.l.virtual_stages = 1;
    CHECK(g.PlanError().find("overlap.ep with pp > 1 needs interleaved-1f1b") != std::string::npos);
  }
  // Orders whose pairs would wait for themselves (GPipe's: each stage's last forward beside a
  // backward that needs the next stage's, which needs that forward's output) run unpaired.
  Bench g = q;
  g.l.schedule = kScheduleGpipe;
  g.l.virtual_stages = 1;
  bool any_pair = false;
  for (const std::vector<Unit>& o : LayoutOrders(g.l, {4, 1, 8})) {
    for (const Unit& u : o) any_pair |= u.pair;
  }
  CHECK_FALSE(any_pair);
  bool q_pairs = false;
  for (const std::vector<Unit>& o : LayoutOrders(q.l, {4, 2, 8})) {
    for (const Unit& u : o) q_pairs |= u.pair;
  }
  CHECK(q_pairs);
  // A dense model has nothing to overlap.
  Bench d(8);
  d.l.dp = 8;
  d.l.overlap_ep = true;
  CHECK(d.PlanError().find("needs an MoE model and ep > 1") != std::string::npos);
}

TEST_CASE(
    "recompute deepseek: the MLA up-projections rerun, less memory than none, faster than full") {
  Bench b(64, "deepseek-v3");
  b.Hardware("h100-sxm5-80gb", "nvlink4-h100", "ib-ndr-400g");
  b.model.layers = 8;
  b.model.moe.dense_layers = 1;
  b.l.pp = 4;
  b.l.ep = 16;
  b.l.dp = 16;
  b.t.seq_len = 4096;
  b.t.global_batch = 128;
  b.t.recompute = RecomputeKind::kDeepseek;
  // Recompute FLOPs: the up-projections, 2 T (1536 x 128 x 192 + 512 x 128 x 256) a layer, in
  // the 8 layers and the MTP module's.
  const SequenceFlops f = FlopsPerSequence(b.model, b.t);
  CHECK(b.model.mtp_depth == 1);
  CHECK(f.recompute == doctest::Approx(9 * 2.0 * 4096 * (1536.0 * 128 * 192 + 512.0 * 128 * 256)));
  const StepReport ds = b.Run();
  const MemoryReport ds_mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  b.t.recompute = RecomputeKind::kNone;
  const StepReport none = b.Run();
  const MemoryReport none_mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  b.t.recompute = RecomputeKind::kFull;
  const StepReport full = b.Run();
  CHECK(ds.step_time_s > none.step_time_s);
  CHECK(ds.step_time_s < full.step_time_s);
  for (size_t s = 0; s < ds.peak_memory_bytes.size(); ++s) {
    CAPTURE(s);
    // Each layer keeps about half its activations, plus what one layer rebuilds at a time:
    // the saving grows with the micro-batches in flight (4 on stage 0 under 1F1B).
    CHECK(ds_mem.stages[s].activations_bytes < none_mem.stages[s].activations_bytes);
    if (s == 0) {
      CHECK(ds_mem.stages[s].activations_bytes < 0.7 * none_mem.stages[s].activations_bytes);
    }
    CHECK(ds.peak_memory_bytes[s] < none.peak_memory_bytes[s]);
    CHECK(ds.peak_memory_bytes[s] > full.peak_memory_bytes[s]);
  }
}

TEST_CASE("recompute_layers: the first N layers of each chunk recomputed, the others kept") {
  // GPT-3 175B on TP8 PP8: 12 layers per stage, 1F1B, 16 micro-batches.
  Bench b(64, "gpt3-175b");
  b.l.tp = 8;
  b.l.pp = 8;
  b.t.global_batch = 16;
  b.t.recompute = RecomputeKind::kNone;
  const StepReport none = b.Run();
  const MemoryReport none_mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  b.t.recompute = RecomputeKind::kFull;
  const StepReport full = b.Run();
  std::vector<StepReport> part;
  std::vector<MemoryReport> part_mem;
  for (int n : {0, 3, 6, 9, 12}) {
    b.t.recompute_layers = n;
    part.push_back(b.Run());
    part_mem.push_back(EstimateMemory(b.model, b.t, b.l, b.cluster));
  }
  // None of a stage's layers is the same step as no recompute; all 12 the same as full.
  CHECK(part[0].step_time_s == none.step_time_s);
  CHECK(part[0].peak_memory_bytes == none.peak_memory_bytes);
  CHECK(part[4].step_time_s == full.step_time_s);
  CHECK(part[4].peak_memory_bytes == full.peak_memory_bytes);
  // Each recomputed layer adds its forward once more to every micro-batch's backward, and
  // drops what it saved for every micro-batch in flight: equal steps of 3 layers.
  const double step3 = part[2].step_time_s - part[1].step_time_s;
  CHECK(step3 > 0);
  CHECK(part[3].step_time_s - part[2].step_time_s == doctest::Approx(step3).epsilon(0.01));
  CHECK(part[4].step_time_s - part[3].step_time_s == doctest::Approx(step3).epsilon(0.01));
  const double drop3 = part[1].peak_memory_bytes[0] - part[2].peak_memory_bytes[0];
  CHECK(drop3 > 0);
  CHECK(part[2].peak_memory_bytes[0] - part[3].peak_memory_bytes[0] ==
        doctest::Approx(drop3).epsilon(1e-6));
  for (size_t k = 0; k < part.size(); ++k) {
    CAPTURE(k);
    // The memory planner agrees with the replay on every stage.
    for (size_t s = 0; s < part[k].peak_memory_bytes.size(); ++s) {
      CHECK(part_mem[k].stages[s].total() ==
            doctest::Approx(part[k].peak_memory_bytes[s]).epsilon(0.02));
    }
    // Hardware FLOPs count the recomputed layers only: k * 3 of 12 per stage.
    const double extra = part[k].hw_flops_per_step - part[k].model_flops_per_step;
    const double all = full.hw_flops_per_step - full.model_flops_per_step;
    CHECK(extra == doctest::Approx(all * static_cast<double>(k) / 4).epsilon(1e-9));
  }
  CHECK(part_mem[0].stages[0].activations_bytes == none_mem.stages[0].activations_bytes);
}

TEST_CASE("recompute selective-op reruns wk, wo and w3 of each layer, and the step pays for them") {
  Bench b(64, "llama2-70b");
  b.t.seq_len = 4096;
  b.l.dp = 64;
  b.l.zero = 3;
  b.t.global_batch = 64;
  b.t.recompute = RecomputeKind::kSelectiveOp;
  const double h = 8192, kv = 1024, f = 28672;
  const SequenceFlops sf = FlopsPerSequence(b.model, b.t);
  CHECK(sf.recompute == doctest::Approx(80 * 2.0 * 4096 * h * (kv + h + f)));
  const StepReport sop = b.Run();
  b.t.recompute = RecomputeKind::kFull;
  const StepReport full = b.Run();
  b.t.recompute = RecomputeKind::kSelective;  // flash attention: nothing to rerun
  const StepReport sel = b.Run();
  CHECK(sop.step_time_s > sel.step_time_s);
  CHECK(sop.step_time_s < full.step_time_s);
  CHECK(sop.peak_memory_bytes[0] < sel.peak_memory_bytes[0]);
  CHECK(sop.peak_memory_bytes[0] > full.peak_memory_bytes[0]);
}

TEST_CASE(
    "run's advice: the fewest recomputed layers per chunk that fit, confirmed by the replay") {
  Bench b(64, "gpt3-175b");
  b.l.tp = 8;
  b.l.pp = 8;
  b.t.micro_batch = 2;
  b.t.global_batch = 32;
  const StepReport none = b.Run();
  REQUIRE_FALSE(none.fits);
  const std::string advice = RecomputeLayersAdvice(b.model, b.t, b.l, b.cluster, none);
  CAPTURE(advice);
  REQUIRE(advice.rfind("recompute: full with recompute_layers: ", 0) == 0);
  const int n =
      std::stoi(advice.substr(std::string("recompute: full with recompute_layers: ").size()));
  CHECK(n > 0);
  CHECK(n < 12);
  b.t.recompute = RecomputeKind::kFull;
  b.t.recompute_layers = n;
  CHECK(b.Run().fits);
  b.t.recompute_layers = n - 1;
  CHECK_FALSE(EstimateMemory(b.model, b.t, b.l, b.cluster).fits);
  // Recomputing every layer where n fit: the advice names n and the shorter step.
  b.t.recompute_layers = -1;
  const StepReport all = b.Run();
  const std::string fewer = RecomputeLayersAdvice(b.model, b.t, b.l, b.cluster, all);
  CHECK(fewer.rfind(fmt::format("recompute_layers: {} (of 12 per chunk) also fits", n), 0) == 0);
  // Nothing to say where the fewest that fit are what the step recomputes.
  b.t.recompute_layers = n;
  CHECK(RecomputeLayersAdvice(b.model, b.t, b.l, b.cluster, b.Run()).empty());
}

TEST_CASE("recompute_layers counts per model chunk: interleaved stages hold several") {
  Bench b(64, "gpt3-175b");
  b.l.tp = 8;
  b.l.pp = 8;
  b.l.schedule = kScheduleInterleaved;
  b.l.virtual_stages = 2;  // 16 chunks of 6 layers
  b.t.recompute = RecomputeKind::kFull;
  b.t.recompute_layers = 2;
  const std::vector<char> mask = RecomputedLayers(b.l, b.t, b.model.layers);
  REQUIRE(mask.size() == 96);
  for (int i = 0; i < 96; ++i) {
    CAPTURE(i);
    CHECK(mask[static_cast<size_t>(i)] == (i % 6 < 2 ? 1 : 0));
  }
  b.t.recompute_layers = 100;  // more than a chunk holds: every layer
  CHECK(RecomputedLayers(b.l, b.t, 96) == std::vector<char>(96, 1));
  b.t.recompute = RecomputeKind::kNone;
  CHECK(RecomputedLayers(b.l, b.t, 96) == std::vector<char>(96, 0));
  // The replay and the planner agree on a stage holding two chunks.
  b.t.recompute = RecomputeKind::kFull;
  b.t.recompute_layers = 2;
  b.t.global_batch = 16;
  const StepReport r = b.Run();
  const MemoryReport mem = EstimateMemory(b.model, b.t, b.l, b.cluster);
  CHECK(mem.stages[0].total() == doctest::Approx(r.peak_memory_bytes[0]).epsilon(0.03));
}

TEST_CASE("MFU and tokens/s follow from the replayed step time and the layer graph's FLOPs") {
  Bench b(8, "gpt3-175b");
  b.t.global_batch = 8;
  // SC21: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) model FLOPs per step.
  const double B = 8, s = 2048, l = 96, h = 12288, V = 51200;
  const double sc21 = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  SequenceFlops f = FlopsPerSequence(b.model, b.t);
  CHECK(f.model * B == doctest::Approx(sc21).epsilon(0.02));
  b.t.recompute = RecomputeKind::kFull;
  f = FlopsPerSequence(b.model, b.t);
  const double sc21_hw = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  CHECK((f.model + f.recompute) * B == doctest::Approx(sc21_hw).epsilon(0.02));
}

// A cluster of `nodes` 8-GPU nodes of catalog GPU `gpu` (placement needs no fabric).
ClusterSpec EightGpuNodes(const char* gpu, int nodes) {
  ClusterSpec c;
  c.gpu = *LoadHardwareCatalog()->FindGpu(gpu);
  c.nodes = nodes;
  c.gpus_per_node = 8;
  return c;
}

TEST_CASE("placement: TP innermost, pipeline outermost; group shapes for the cost model") {
  ClusterSpec c = EightGpuNodes("a100-sxm4-80gb", 128);
  Layout l;
  l.tp = 8;
  l.pp = 8;
  l.dp = 16;
  Placement pl(l, c);
  CHECK(pl.Group(GroupKind::kTp).per_node == 8);
  CHECK_FALSE(pl.CrossesNodes(GroupKind::kTp));
  CHECK(pl.Group(GroupKind::kDp).size == 16);
  CHECK(pl.Group(GroupKind::kDp).per_node == 1);
  CHECK(pl.StageBoundaryInterNode(0));
  RankCoords rc = pl.Coords(pl.Rank({3, 0, 5, 2}));
  CHECK(rc.tp == 3);
  CHECK(rc.dp == 5);
  CHECK(rc.pp == 2);
  // DP innermost instead: the gradient group fits a node, TP straddles nodes.
  l.order = {RankDim::kDp, RankDim::kTp, RankDim::kPp};
  l.dp = 8;
  l.pp = 16;
  Placement dp_first(l, c);
  CHECK(dp_first.Group(GroupKind::kDp).per_node == 8);
  CHECK(dp_first.CrossesNodes(GroupKind::kTp));
  // EP is carved out of the data-parallel ranks.
  Layout e;
  e.tp = 2;
  e.dp = 16;
  e.ep = 8;
  c.nodes = 4;
  Placement ep(e, c);
  CHECK(ep.Group(GroupKind::kEp).size == 8);
  CHECK(ep.Group(GroupKind::kEp).per_node == 4);
  CHECK(ep.ExpertDataGroup().size == 2);
  CHECK(ep.Members(GroupKind::kEtp, 5) == ep.Members(GroupKind::kTp, 5));
}

TEST_CASE("placement: MoE parallel folding regroups a stage's ranks as etp x ep x edp") {
  const ClusterSpec c = EightGpuNodes("h100-sxm5-80gb", 32);
  // Qwen3 235B on 256 H100 (Megatron-Bridge): TP2 PP8 DP16, EP32 with ETP1: one EP group
  // holds every rank of a stage, TP pairs included, so 8 of its 32 members share a node.
  Layout q{.tp = 2, .pp = 8, .dp = 16, .ep = 32, .etp = 1};
  Placement fold(q, c);
  const GroupPlacement ep = fold.Group(GroupKind::kEp);
  CHECK(ep.size == 32);
  CHECK(ep.per_node == 8);
  CHECK(fold.Group(GroupKind::kEtp).size == 1);
  CHECK(fold.ExpertDataGroup().size == 1);
  CHECK(q.expert_data_width() == 1);
  std::vector<int64_t> stage0 = fold.Members(GroupKind::kEp, 0);
  std::sort(stage0.begin(), stage0.end());
  for (int64_t i = 0; i < 32; ++i) CHECK(stage0[static_cast<size_t>(i)] == i);
  CHECK(fold.Members(GroupKind::kEp, 37).front() >= 32);  // the second stage's ranks
  // TP4 DP8 with EP8 x ETP2: expert-TP pairs inside each TP group, EP across them.
  Layout f{.tp = 4, .pp = 8, .dp = 8, .ep = 8, .etp = 2};
  Placement two(f, c);
  CHECK(two.Members(GroupKind::kEtp, 0) == std::vector<int64_t>{0, 1});
  CHECK(two.Members(GroupKind::kEtp, 6) == std::vector<int64_t>{6, 7});
  CHECK(two.Members(GroupKind::kEp, 1) == std::vector<int64_t>{1, 3, 5, 7, 9, 11, 13, 15});
  CHECK(two.ExpertDataMembers(1) == std::vector<int64_t>{1, 17});
  CHECK(two.Group(GroupKind::kEp).per_node == 4);
  CHECK(f.expert_data_width() == 2);
  // etp = tp leaves the groups as they were: EP over DP ranks of one TP coordinate.
  f.etp = 4;
  Placement same(f, c);
  CHECK(same.Members(GroupKind::kEp, 1) == std::vector<int64_t>{1, 5, 9, 13, 17, 21, 25, 29});
  CHECK(same.Members(GroupKind::kEtp, 1) == same.Members(GroupKind::kTp, 1));
}

TEST_CASE("lowering errors: --full on a large cluster is refused with the reason") {
  Bench b(2048);
  b.l.tp = 8;
  b.l.pp = 8;
  b.l.dp = 32;
  b.t.global_batch = 256;
  StepOptions o;
  o.full = true;
  auto r = SimulateStep(b.model, b.t, b.l, b.cluster, o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("--full") != std::string::npos);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST_CASE(
    "every combination of schedule, stages, chunks, ZeRO and overlap replays without deadlock") {
  int runs = 0;
  for (int pp : {2, 3, 4}) {
    for (int v : {1, 2, 3}) {
      for (int zero : {0, 1, 2, 3}) {
        for (Layout::TpOverlap tp :
             {Layout::TpOverlap::kNone, Layout::TpOverlap::kBackward, Layout::TpOverlap::kAll}) {
          const bool overlap = tp != Layout::TpOverlap::kNone;
          Bench b(pp * 2);
          b.model = *b.models.Find("gpt3-1.3b");  // 24 layers: divisible by 2, 3, 4 x v
          b.l.pp = pp;
          b.l.dp = 2;
          b.l.zero = zero;
          b.l.overlap_dp = overlap;
          b.l.overlap_tp = tp;
          b.l.schedule = v > 1 ? kScheduleInterleaved : kSchedule1F1B;
          b.l.virtual_stages = v;
          b.t.global_batch = 2 * 2 * pp;  // 2p micro-batches
          b.t.recompute = zero % 2 ? RecomputeKind::kFull : RecomputeKind::kSelective;
          for (Granularity g : {Granularity::kCoarse, Granularity::kOp}) {
            StepOptions o;
            o.granularity = g;
            o.full = overlap;
            auto r = SimulateStep(b.model, b.t, b.l, b.cluster, o);
            CAPTURE(pp);
            CAPTURE(v);
            CAPTURE(zero);
            REQUIRE_MESSAGE(r.ok(), r.status().message());
            CHECK(r->step_time_s >= r->stage_compute_s[0] * 0.999);
            CHECK(r->bubble_fraction >= 0);
            ++runs;
          }
        }
      }
    }
  }
  CHECK(runs == 216);
}

TEST_CASE("calibrate --scenario: the step's GEMM shapes are the ones the cost model looks up") {
  Bench b(8, "llama2-7b");
  b.l.tp = 8;
  b.t.micro_batch = 2;
  const StepKernels k = StepKernelsOf(b.model, b.t, b.l);
  // Llama-2 7B at TP 8: QKV is (b s) x (3 h / 8) x h, the MLP's gate+up (b s) x (2 ffn / 8) x h.
  const int64_t rows = 2 * 2048, h = b.model.hidden;
  auto has = [&](int64_t m, int64_t n, int64_t kk) {
    for (const auto& g : k.gemms) {
      if (g.m == m && g.n == n && g.k == kk) return true;
    }
    return false;
  };
  CHECK(has(rows, 3 * h / 8, h));  // forward
  CHECK(has(rows, h, 3 * h / 8));  // input gradient
  CHECK(has(h, 3 * h / 8, rows));  // weight gradient
  CHECK(has(rows, 2 * b.model.ffn() / 8, h));
  CHECK(k.attention_batch == 2 * 32 / 8);
  CHECK(k.attention_seq == 2048);
  CHECK(k.attention_head_dim == 128);
  // Shapes are distinct.
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  for (const auto& g : k.gemms) CHECK(seen.insert({g.m, g.n, g.k}).second);
  // A profile holding every shape at half the curve's efficiency slows every GEMM 2x: the step's
  // compute grows by the GEMMs' share, so each shape was found by the lowering.
  const StepReport base = b.Run();
  CostModel cm(b.cluster, b.t.precision);
  for (const auto& g : k.gemms) {
    b.cluster.gpu.gemm_shapes.push_back(
        {b.t.precision, g.m, g.n, g.k, cm.GemmEfficiency(g.m, g.n, g.k)});
  }
  const StepReport same = b.Run();
  CHECK(same.step_time_s == doctest::Approx(base.step_time_s).epsilon(1e-9));
  for (auto& g : b.cluster.gpu.gemm_shapes) g.efficiency /= 2;
  const StepReport slow = b.Run();
  CHECK(slow.step_time_s > 1.5 * base.step_time_s);
  // A shape the step does not run changes nothing.
  b.cluster.gpu.gemm_shapes = {{b.t.precision, 12345, 678, 91, 0.01}};
  CHECK(b.Run().step_time_s == doctest::Approx(base.step_time_s).epsilon(1e-9));
}

TEST_CASE("Korthikanti 22B per layer (Table 4): recompute and sequence-parallel ratios") {
  // One transformer layer of the 22B model on TP8 (A100, fp16, materialised attention, sequence
  // 2048, one micro-batch of 4 as in Table 3), as the step's replay times it: the difference
  // between 3 and 1 layers, over 2. Korthikanti et al. 2022 Table 4 (KNOWLEDGE.md), ms fwd+bwd per
  // layer: baseline 19.6, sequence parallel 19.0, full recompute 27.2, selective 20.9, selective +
  // SP 20.3.
  Bench b(8, "gpt3-175b");
  b.model.layers = 1;
  b.model.hidden = 6144;
  b.model.heads = 64;
  b.model.ffn_hidden = 0;
  b.model.vocab = 51200;
  b.t.precision = Dtype::kFp16;
  b.t.grad_dtype = Dtype::kFp32;
  b.t.attention = AttentionKind::kStandard;
  b.t.global_batch = 4;
  b.t.micro_batch = 4;
  b.l.tp = 8;
  auto per_layer = [&](RecomputeKind rc, bool sp) {
    b.t.recompute = rc;
    b.l.sp = sp;
    b.model.layers = 1;
    const double one = b.Run().step_time_s;
    b.model.layers = 3;
    const double three = b.Run().step_time_s;
    return (three - one) / 2;
  };
  const double base = per_layer(RecomputeKind::kNone, false);
  const double sp = per_layer(RecomputeKind::kNone, true);
  const double full = per_layer(RecomputeKind::kFull, false);
  const double sel = per_layer(RecomputeKind::kSelective, false);
  const double sel_sp = per_layer(RecomputeKind::kSelective, true);
  MESSAGE("per layer (ms): baseline ", base * 1e3, ", SP ", sp * 1e3, ", full ", full * 1e3,
          ", selective ", sel * 1e3, ", selective + SP ", sel_sp * 1e3);
  // Full recompute replays the forward: 27.2 / 19.6 = 1.388 measured.
  CHECK(full / base == doctest::Approx(27.2 / 19.6).epsilon(0.03));
  // Selective recompute replays the attention core only: 20.9 / 19.6 = 1.066.
  CHECK(sel / base == doctest::Approx(20.9 / 19.6).epsilon(0.03));
  // Sequence parallelism turns all-reduces into reduce-scatter + all-gather and shards the
  // norms and dropouts: 19.0 / 19.6 = 0.969, and 20.3 / 19.6 = 1.036 with selective recompute.
  CHECK(sp / base == doctest::Approx(19.0 / 19.6).epsilon(0.03));
  CHECK(sel_sp / base == doctest::Approx(20.3 / 19.6).epsilon(0.05));
  // Full recompute adds about one forward to the backward: 7.6 ms measured (19.5 - 11.9).
  CHECK((full - base) / base == doctest::Approx(7.6 / 19.6).epsilon(0.05));
  // Absolute: the replay's layer is about 10% slower than Table 4, with the sustained factor
  // fitted to SC21 Table 1, whose Megatron-LM predates Table 4's by a year (docs/MODEL.md,
  // "Where predictions are weak").
  CHECK(base == doctest::Approx(19.6e-3).epsilon(0.12));
  CHECK(base > 19.6e-3);
}

TEST_CASE("uneven interleaving as Llama 3 405B ran it: an embedding-only and a head-only chunk") {
  // 126 layers on PP16 with one fewer on the first and last stages, one layer per chunk
  // (arXiv 2407.21783 sec. 3.3.2).
  Layout l;
  l.pp = 16;
  l.virtual_stages = 8;
  l.schedule = kScheduleInterleaved;
  l.stage_layers.assign(16, 8);
  l.stage_layers.front() = l.stage_layers.back() = 7;
  const auto chunks = ChunkLayers(l, 126, l.virtual_stages);
  CHECK(chunks[0][0] == 0);
  CHECK(chunks[15][7] == 0);
  int total = 0, ones = 0;
  for (const auto& stage : chunks) {
    for (int n : stage) {
      total += n;
      ones += n == 1;
    }
  }
  CHECK(total == 126);
  CHECK(ones == 126);

  // The layout check takes it, and refuses a split that leaves a middle chunk empty.
  Bench b(32);
  b.UniformStages();
  b.model.layers = 14;
  b.t.global_batch = 128;  // 16 micro-batches per replica
  Scenario s;
  s.cluster = b.cluster;
  s.model = b.model;
  s.training = b.t;
  s.layout.pp = 4;
  s.layout.dp = 8;
  s.layout.schedule = kScheduleInterleaved;
  s.layout.virtual_stages = 4;
  s.layout.stage_layers = {3, 4, 4, 3};
  CHECK_FALSE(CheckLayout(s).has_value());
  s.layout.stage_layers = {2, 5, 4, 3};  // stage 0: chunks 0, 0, 1, 1
  auto problem = CheckLayout(s);
  REQUIRE(problem.has_value());
  CHECK(problem->key == "stage_layers");
  CHECK(problem->message.find("stage 0 has 2 layers for 4 virtual stages") != std::string::npos);

  // Replayed, the uneven interleaved pipeline beats 1F1B on the same stages, and its bubble
  // stays near (p-1)/(v m) = 3/64 of the compute.
  b.l = s.layout;
  b.l.stage_layers = {3, 4, 4, 3};
  const StepReport interleaved = b.Run();
  b.l.schedule = kSchedule1F1B;
  b.l.virtual_stages = 1;
  const StepReport plain = b.Run();
  CHECK(interleaved.step_time_s < plain.step_time_s * 0.9);
  CHECK(interleaved.bubble_fraction < 0.15);

  // Without stage_layers: 14 layers do not split into 16 chunks, but 14 + 2 do, the embedding
  // and the loss counted as a layer each (Megatron-LM's --account-for-embedding-in-pipeline-
  // split and --account-for-loss-in-pipeline-split, account_for: [embedding, loss]), and the
  // step replays as with the stages stated.
  s.layout.stage_layers.clear();
  problem = CheckLayout(s);
  REQUIRE(problem.has_value());
  CHECK(problem->message.find("account_for: [embedding, loss] makes 16 units, which do") !=
        std::string::npos);
  s.layout.split_embedding = s.layout.split_loss = true;
  CHECK_FALSE(CheckLayout(s).has_value());
  CHECK(StageLayers(s.layout, 14) == std::vector<int>{3, 4, 4, 3});
  b.l = s.layout;
  b.l.virtual_stages = 4;
  b.l.schedule = kScheduleInterleaved;
  CHECK(b.Run().step_time_s == interleaved.step_time_s);
  // 17 layers with both ends, 19, do not split into 16 chunks; 15 with the loss alone do.
  s.model.layers = 17;
  problem = CheckLayout(s);
  REQUIRE(problem.has_value());
  CHECK(problem->key == "account_for");
  CHECK(problem->message.find("with the embedding and the loss counted as a layer each, 19, do "
                              "not split evenly") != std::string::npos);
  s.model.layers = 15;
  s.layout.split_embedding = false;
  CHECK_FALSE(CheckLayout(s).has_value());
  CHECK(StageLayers(s.layout, 15) == std::vector<int>{4, 4, 4, 3});
  CHECK(ChunkLayers(s.layout, 15, 4).back() == std::vector<int>{1, 1, 1, 0});
  // Llama 3 405B's 126 layers on PP16 x 8 (128 chunks).
  Layout meta;
  meta.pp = 16;
  meta.split_embedding = meta.split_loss = true;
  std::vector<int> want(16, 8);
  want.front() = want.back() = 7;
  CHECK(StageLayers(meta, 126) == want);
}

TEST_CASE("the step's lower bound holds when the last stage's optimizer outweighs the first's") {
  // The invariant suite's find (tests/invariants_test.cc, 20,000 scenarios): Mixtral's shape cut
  // to 3 layers on 4 MI355X, PP2 x CP2 x EP2. Stage 1 holds two of the three MoE layers, so its
  // optimizer pass is the longer one; the bound once added it after the drain, where stage 0's
  // runs (0.0372 s against a 0.0365 s replay), and the sweep pruned a layout of the front.
  Bench b(4, "mixtral-8x7b");
  b.Hardware("mi355x", "nvlink5", "roce-200g");
  b.NoHost();  // a model this small is the host's: the bound's tightness is the GPU's
  b.cluster.nodes = 2;
  b.cluster.gpus_per_node = 2;
  b.model.layers = 3;
  b.t.seq_len = 512;
  b.t.global_batch = 8;
  b.l.pp = 2;
  b.l.cp = 2;
  b.l.ep = 2;
  b.l.dp = 1;
  b.l.zero = 1;
  REQUIRE(b.PlanError().empty());
  for (RecomputeKind rc : {RecomputeKind::kNone, RecomputeKind::kFull}) {
    CAPTURE(static_cast<int>(rc));
    b.t.recompute = rc;
    std::vector<double> held;
    for (const StageMemory& st : EstimateMemory(b.model, b.t, b.l, b.cluster).stages) {
      held.push_back(st.held_bytes());
    }
    const auto bound = StepLowerBounds(b.model, b.t, b.l, b.cluster, held);
    REQUIRE(bound.ok());
    const StepReport r = b.Run();
    CHECK(bound->step_s > 0.9 * r.step_time_s);  // still a tight bound
    CHECK(bound->step_s <= r.step_time_s);
  }
}

TEST_CASE("LoRA under ZeRO 3: the frozen base is sharded and gathered layer by layer") {
  // FSDP's FULL_SHARD of a PEFT model shards the frozen weights too: the replay kept them whole
  // (31.5 GiB at ZeRO 0, 30.8 at ZeRO 3 for Llama 2 13B adapters on 8 A100) and gathered only
  // the adapters.
  Bench b(8, "llama2-13b");
  b.t.finetune = FinetuneKind::kLora;
  b.t.global_batch = 32;
  b.t.micro_batch = 4;
  b.t.recompute = RecomputeKind::kFull;
  b.l.dp = 8;
  const StepReport z0 = b.Run();
  b.l.zero = 3;
  const StepReport z3 = b.Run();
  CHECK(z3.peak_memory_bytes[0] < 0.5 * z0.peak_memory_bytes[0]);
  // Each forward and backward gathers a layer's base (about 0.63 GB of it at 16 bits), which
  // the bandwidth alone prices at over 2 ms on NVLink: the step is longer by far more than the
  // adapters' gathers.
  CHECK(z3.step_time_s > z0.step_time_s * 1.02);
  b.t.finetune = FinetuneKind::kQlora;
  const StepReport q3 = b.Run();
  CHECK(q3.peak_memory_bytes[0] < z3.peak_memory_bytes[0]);
}

}  // namespace
}  // namespace parasim
