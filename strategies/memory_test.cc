#include "strategies/memory.h"

#include <doctest/doctest.h>

#include <cmath>

#include "strategies/schedule.h"

namespace parasim {
namespace {

struct Setup {
  HardwareCatalog hw = *LoadHardwareCatalog();
  ModelCatalog models = *LoadModelCatalog();
  ClusterSpec cluster;
  Setup() {
    cluster.gpu = *hw.FindGpu("a100-sxm4-80gb");
    cluster.intra = *hw.FindFabric("nvlink3-a100");
    cluster.inter = *hw.FindFabric("ib-hdr-200g");
  }
};

// Llama 2 7B at 4,096 tokens, a global batch of 8, on 8 data-parallel ranks.
struct Seed7b {
  Setup su;
  ModelSpec m = *su.models.Find("llama2-7b");
  Training t;
  Layout l;
  Seed7b() {
    t.seq_len = 4096;
    t.global_batch = 8;
    l.dp = 8;
  }
};

double States(const StageMemory& s) { return s.params_bytes + s.grads_bytes + s.optimizer_bytes; }

TEST_CASE("seed 7B: 16 bytes per parameter, 112 GB of model states; 18 with fp32 gradients") {
  Setup su;
  ModelSpec m = *su.models.Find("llama2-7b");
  Training t;
  t.seq_len = 4096;
  t.global_batch = 8;
  t.precision = Dtype::kBf16;
  t.grad_dtype = Dtype::kBf16;
  Layout l;
  l.dp = 8;
  MemoryReport r = EstimateMemory(m, t, l, su.cluster);
  CHECK(r.bytes_per_param == 16);
  const double p = CountParams(m).total;
  CHECK(States(r.stages[0]) == doctest::Approx(16 * p).epsilon(1e-6));
  CHECK(States(r.stages[0]) / 1e9 == doctest::Approx(112 * p / 7e9).epsilon(0.01));
  CHECK_FALSE(r.fits);  // 108 GB of states on an 80 GB GPU
  t.grad_dtype = Dtype::kFp32;
  CHECK(EstimateMemory(m, t, l, su.cluster).bytes_per_param == 18);
  // The precision-aware optimizer's master: the fp32 value's 16-bit remainder beside the bf16
  // weights (Transformer Engine's store_param_remainders), or fp16: two bytes, not four.
  t.master_weights = MasterWeights::kRemainder;
  CHECK(EstimateMemory(m, t, l, su.cluster).bytes_per_param == 16);
  // Beside fp16 weights (a sweep over the precision) a remainder is a whole fp32 master.
  t.precision = Dtype::kFp16;
  t.grad_dtype = Dtype::kFp16;
  CHECK(EstimateMemory(m, t, l, su.cluster).bytes_per_param == 16);
  t.precision = Dtype::kBf16;
  t.grad_dtype = Dtype::kFp32;
  t.master_weights = MasterWeights::kFp16;
  t.moments = Dtype::kBf16;
  CHECK(EstimateMemory(m, t, l, su.cluster).bytes_per_param == 12);
  // fp32 weights are their own master, whatever the key says.
  t.precision = Dtype::kFp32;
  t.grad_dtype = Dtype::kFp32;
  t.moments = Dtype::kFp32;
  CHECK(EstimateMemory(m, t, l, su.cluster).bytes_per_param == 16);
}

TEST_CASE("ZeRO 1/2/3 shard optimizer, then gradients, then parameters") {
  Seed7b s;
  auto& [su, m, t, l] = s;
  const double p = CountParams(m).total;
  double prev = 1e300;
  for (int z = 0; z <= 3; ++z) {
    l.zero = z;
    double s = States(EstimateMemory(m, t, l, su.cluster).stages[0]);
    CHECK(s < prev);
    prev = s;
  }
  CHECK(prev == doctest::Approx(16 * p / 8).epsilon(1e-6));
  l.zero = 3;
  CHECK(EstimateMemory(m, t, l, su.cluster).fits);
}

TEST_CASE(
    "grad_reduce: gradients accumulated to one reduction per step stay whole under ZeRO 2/3") {
  Setup su;
  ModelSpec m = *su.models.Find("llama2-7b");
  Training t;
  t.seq_len = 4096;
  t.global_batch = 64;
  Layout l;
  l.dp = 8;
  const double p = CountParams(m).total;
  const double grads_per_param = 2;  // bf16 gradients, the default grad_dtype
  for (int z = 0; z <= 3; ++z) {
    CAPTURE(z);
    l.zero = z;
    l.grad_reduce = Layout::GradReduce::kAuto;
    const StageMemory automatic = EstimateMemory(m, t, l, su.cluster).stages[0];
    l.grad_reduce = Layout::GradReduce::kStep;
    const StageMemory step = EstimateMemory(m, t, l, su.cluster).stages[0];
    l.grad_reduce = Layout::GradReduce::kMicroBatch;
    const StageMemory every = EstimateMemory(m, t, l, su.cluster).stages[0];
    // ZeRO 2/3 reduce-scatter every micro-batch by default and keep their shard; FSDP's no_sync
    // keeps the whole accumulated gradient. ZeRO 0/1 hold it whole either way.
    CHECK(automatic.grads_bytes ==
          doctest::Approx(grads_per_param * p / (z >= 2 ? 8 : 1)).epsilon(1e-9));
    CHECK(step.grads_bytes == doctest::Approx(grads_per_param * p).epsilon(1e-9));
    CHECK(every.grads_bytes == automatic.grads_bytes);
    // Parameters and optimizer states shard as the ZeRO stage says, whatever grad_reduce.
    CHECK(step.params_bytes == automatic.params_bytes);
    CHECK(step.optimizer_bytes == automatic.optimizer_bytes);
  }
}

TEST_CASE("ZeRO 3's gathered parameters: two layers, and the tables as each implementation holds") {
  // Llama 3 8B on two stages, one layer and the embedding on the first: a mean layer had spread
  // the tables over the stage's layers (two "layers" of embedding and layer on stage 0).
  Seed7b s;
  auto& [su, m, t, l] = s;
  m = *su.models.Find("llama3-8b");
  l.pp = 2;
  l.stage_layers = {1, 31};
  const ParamCounts pc = CountParams(m);
  const double bf16 = 2, table = pc.embedding, layer = pc.per_dense_layer;
  REQUIRE(pc.lm_head == table);  // untied, the same shape
  REQUIRE(table > layer);        // a 128K vocabulary: each table 2.4 layers
  auto gathered = [&](bool copies, int stage) {
    l.zero3_copies = copies;
    l.zero = 2;
    const double base = EstimateMemory(m, t, l, su.cluster).stages[stage].other_bytes;
    l.zero = 3;
    return EstimateMemory(m, t, l, su.cluster).stages[stage].other_bytes - base;
  };
  // FSDP2 (per-parameter sharding): each table its own unit, beside one layer gathered ahead.
  for (int stage : {0, 1}) {
    CAPTURE(stage);
    CHECK(gathered(true, stage) == doctest::Approx(bf16 * (table + layer)).epsilon(0.01));
    // Megatron-FSDP and FSDP1 (flat buffers): the tables stay gathered, beside two layers.
    CHECK(gathered(false, stage) == doctest::Approx(bf16 * (table + 2 * layer)).epsilon(0.01));
  }
  // Held after their forward (to the backward, or to the step's end under
  // torch.distributed.pipelining), every layer and table of the stage is gathered at once.
  for (auto r : {Layout::Zero3Reshard::kBackward, Layout::Zero3Reshard::kStep}) {
    l.zero3_reshard = r;
    CHECK(gathered(true, 0) == doctest::Approx(bf16 * (table + layer)).epsilon(0.01));
    CHECK(gathered(true, 1) == doctest::Approx(bf16 * (table + 31 * layer)).epsilon(0.01));
  }
  // Over one rank ZeRO 3 shards nothing and gathers nothing: its weights are whole.
  l.dp = 1;
  for (int stage : {0, 1}) CHECK(gathered(true, stage) == 0);
  l.dp = 8;
  l.zero3_reshard = Layout::Zero3Reshard::kForward;
  // Llama 2 7B's tables (32K) are smaller than a layer: two layers gathered under FSDP2.
  m = *su.models.Find("llama2-7b");
  CHECK(gathered(true, 0) ==
        doctest::Approx(bf16 * 2 * CountParams(m).per_dense_layer).epsilon(0.01));
}

TEST_CASE("Korthikanti Fig. 1: GPT-3 175B TP8 PP8 first-stage model states 45.6 GiB") {
  Setup su;
  ModelSpec m = *su.models.Find("gpt3-175b");
  Training t;
  t.seq_len = 2048;
  t.global_batch = 64;
  t.grad_dtype = Dtype::kFp32;  // Megatron keeps fp32 main gradients: 18 bytes per parameter
  Layout l;
  l.tp = 8;
  l.pp = 8;
  l.dp = 1;
  MemoryReport r = EstimateMemory(m, t, l, su.cluster);
  // The figure matches the 12 transformer layers of a stage (2.72B parameters x 18 bytes); the
  // first stage also holds the embedding table (+104M parameters, +1.7 GiB), a middle stage not.
  CHECK(States(r.stages[1]) / 1073741824.0 == doctest::Approx(45.6).epsilon(0.02));
  CHECK(States(r.stages[0]) - States(r.stages[1]) ==
        doctest::Approx(18 * (51200.0 * 12288 / 8 + 2048.0 * 12288)).epsilon(0.01));
}

TEST_CASE("GPipe holds all m micro-batches, 1F1B at most p on the first stage") {
  Setup su;
  ModelSpec m = *su.models.Find("gpt3-1.3b");
  Training t;
  t.seq_len = 2048;
  t.global_batch = 16;
  Layout l;
  l.pp = 4;
  l.schedule = kScheduleGpipe;
  MemoryReport g = EstimateMemory(m, t, l, su.cluster);
  l.schedule = kSchedule1F1B;
  MemoryReport f = EstimateMemory(m, t, l, su.cluster);
  CHECK(g.stages[0].in_flight == 16);
  CHECK(f.stages[0].in_flight == 4);
  CHECK(f.stages[3].in_flight == 1);
  CHECK(g.stages[1].activations_bytes > 3.9 * f.stages[1].activations_bytes);
}

TEST_CASE("torchtitan selective-op: Llama 2 70B on 64 A100 fits at local batch 1, not at 2") {
  // torchtitan docs/performance.md (FSDP2, 64 A100 80GB, seq 4096): the 70B 'selective op'
  // row runs at local batch 1 "because lbs 2 OOMs with selective AC".
  Setup su;
  const ModelSpec m = *su.models.Find("llama2-70b");
  Training t;
  t.seq_len = 4096;
  t.micro_batch = 1;
  t.global_batch = 64;
  t.grad_dtype = Dtype::kFp32;
  t.recompute = RecomputeKind::kSelectiveOp;
  Layout l;
  l.dp = 64;
  l.zero = 3;
  CHECK(EstimateMemory(m, t, l, su.cluster).fits);
  t.micro_batch = 2;
  t.global_batch = 128;
  CHECK_FALSE(EstimateMemory(m, t, l, su.cluster).fits);
  // Megatron's selective recompute keeps every activation but the attention core's, which
  // flash attention never stores: it does not fit even at local batch 1.
  t.micro_batch = 1;
  t.global_batch = 64;
  t.recompute = RecomputeKind::kSelective;
  CHECK_FALSE(EstimateMemory(m, t, l, su.cluster).fits);
}

TEST_CASE("LoRA trains adapters only; QLoRA stores the base in about 4 bits") {
  Setup su;
  ModelSpec m = *su.models.Find("llama2-13b");
  Training t;
  t.seq_len = 2048;
  t.global_batch = 4;
  t.finetune = FinetuneKind::kLora;
  Layout l;
  MemoryReport lora = EstimateMemory(m, t, l, su.cluster);
  const double p = CountParams(m).total;
  CHECK(lora.stages[0].params_bytes == doctest::Approx(2 * p).epsilon(0.02));
  CHECK(lora.stages[0].optimizer_bytes < 0.01 * 12 * p);
  t.finetune = FinetuneKind::kQlora;
  MemoryReport q = EstimateMemory(m, t, l, su.cluster);
  // The layers' Linears in 4.127 bits; the embedding table and the untied LM head stay 16-bit
  // (bitsandbytes converts neither): 0.45 GiB more than all in 4 bits on Llama 2 13B.
  const double tables = 2.0 * m.vocab * m.hidden, adapters = lora.stages[0].params_bytes - 2 * p;
  CHECK(q.stages[0].params_bytes ==
        doctest::Approx((p - tables) * 4.127 / 8 + 2 * tables + adapters).epsilon(1e-5));
}

TEST_CASE("LoRA under ZeRO: the adapters' states shard over DP; ZeRO 3 shards the frozen base") {
  // They stayed whole at every stage, and ZeRO-3 added its gather buffer on top: 8 A100 with
  // Llama 2 13B adapters read 31.5 GiB at ZeRO 0 and 1, 32.7 GiB at ZeRO 3.
  Setup su;
  ModelSpec m = *su.models.Find("llama2-13b");
  Training t;
  t.seq_len = 2048;
  t.global_batch = 32;
  t.micro_batch = 4;
  t.recompute = RecomputeKind::kFull;
  t.finetune = FinetuneKind::kLora;
  Layout l;
  l.dp = 8;
  auto at = [&](int zero) {
    l.zero = zero;
    return EstimateMemory(m, t, l, su.cluster).stages[0];
  };
  const StageMemory z0 = at(0), z1 = at(1), z2 = at(2), z3 = at(3);
  CHECK(z1.optimizer_bytes == doctest::Approx(z0.optimizer_bytes / 8));
  CHECK(z1.grads_bytes == z0.grads_bytes);
  CHECK(z2.grads_bytes == doctest::Approx(z0.grads_bytes / 8));
  CHECK(z2.params_bytes == z0.params_bytes);
  // Stage 3 shards every weight, the adapters' (2 bytes each, as their bf16 gradients) and the
  // frozen base's (FSDP's FULL_SHARD of a PEFT model, FSDP-QLoRA): it stayed whole, 24.3 GiB
  // a rank at ZeRO 3 as at ZeRO 0.
  CHECK(z3.params_bytes == doctest::Approx(z0.params_bytes / 8));
  CHECK(z3.total() < z2.total());
  CHECK(z2.total() < z1.total());
  CHECK(z1.total() < z0.total());
  // Experts' adapters shard over the ranks that hold the same experts (edp = 2 here), not over
  // all 16 data-parallel ranks.
  ModelSpec mix = *su.models.Find("mixtral-8x7b");
  Layout e;
  e.tp = 2;
  e.sp = true;
  e.dp = 16;
  e.ep = 8;
  Training tm = t;
  tm.global_batch = 64;
  tm.micro_batch = 1;
  auto moe = [&](int zero) {
    e.zero = zero;
    return EstimateMemory(mix, tm, e, su.cluster).stages[0];
  };
  const StageMemory m0 = moe(0), m1 = moe(1);
  CHECK(m1.optimizer_bytes > 2 * m0.optimizer_bytes / 16);
  CHECK(m1.optimizer_bytes < m0.optimizer_bytes / 2);
}

TEST_CASE("the replay's peaks set each stage's activations, and the micro-batches in flight") {
  MemoryReport r;
  r.capacity_bytes = 100;
  StageMemory st;
  st.params_bytes = 20;
  st.activations_bytes = 10;
  st.in_flight = 2;  // 5 a micro-batch
  r.stages = {st, st};
  // Stage 0 as planned; stage 1's replay holds 40 more: 50 of activations, 10 micro-batches.
  CHECK(AdoptReplayPeaks({30, 70}, &r) == 1);
  CHECK(r.stages[0].activations_bytes == 10);
  CHECK(r.stages[1].activations_bytes == 50);
  CHECK(r.stages[1].in_flight == doctest::Approx(10));
  CHECK(r.fits);
  CHECK(AdoptReplayPeaks({30, 170}, &r) == 1);
  CHECK_FALSE(r.fits);
  CHECK(AdoptReplayPeaks({30}, &r) == 0);  // another stage count: left as it is
}

// The corpus's smallest GPT (tests/validation/megatron-ci: 12 layers, hidden 512, 8 heads, GPT-2's
// vocabulary padded to 50304), micro-batch 4 x 1024 tokens, bf16 with fp32 main gradients.
ModelSpec TinyGpt() {
  ModelSpec m;
  m.layers = 12;
  m.hidden = 512;
  m.heads = 8;
  m.vocab = 50304;
  m.max_position = 1024;
  m.tied_embeddings = true;  // Megatron-LM's default
  return m;
}

TEST_CASE("the last stage's peak as torch.cuda.max_memory_allocated counts it") {
  Setup su;
  su.cluster.gpu = *su.hw.FindGpu("h100-sxm5-80gb");
  const ModelSpec m = TinyGpt();
  Training t;
  t.seq_len = 1024;
  t.micro_batch = 4;
  t.global_batch = 32;
  t.grad_dtype = Dtype::kFp32;
  Layout l;
  l.dp = 8;
  l.zero = 1;
  const StageMemory st = EstimateMemory(m, t, l, su.cluster).stages[0];
  constexpr double kMiB = 1024.0 * 1024.0;
  // The loss works beside the kept fp32 softmax on the bf16 logits: 2 bytes a logit.
  CHECK(st.transient_bytes == 2.0 * 4 * 1024 * 50304);
  // Two cuBLAS workspaces (forward and autograd threads) and Transformer Engine's on an H100;
  // no data-parallel bucket beside the gradient buffer.
  CHECK(st.other_bytes == 96 * kMiB + 1024);
  CHECK(st.reserve_bytes == kFrameworkReserveBytes);
  CHECK(st.allocated() == st.total() - kFrameworkReserveBytes);
  // Measured on the last (only) stage: 2,691,792,384 B max allocated (megatron-ci,
  // gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer on dgx_h100: 2,567.1 MiB).
  CHECK(st.allocated() == doctest::Approx(2691792384.0).epsilon(0.02));
}

TEST_CASE("context parallelism gathering K and V: the whole sequence's, and their gradients") {
  // Llama 2 7B (32 heads, no GQA) at 128K tokens on CP8, full recompute: a gathered layer's K
  // and V are 131,072 x 4,096 x 2 x 2 B = 2 GiB, and the backward holds their gradients too,
  // beside the layer that recompute rebuilds (a review found neither counted).
  Setup su;
  su.cluster.gpu = *su.hw.FindGpu("h100-sxm5-80gb");
  const ModelSpec m = *su.models.Find("llama2-7b");
  Training t;
  t.seq_len = 131072;
  t.global_batch = 1;
  t.recompute = RecomputeKind::kFull;
  Layout l;
  l.cp = 8;
  l.cp_comm = Layout::CpComm::kAllGather;
  const StageMemory gathered = EstimateMemory(m, t, l, su.cluster).stages[0];
  l.cp_comm = Layout::CpComm::kRing;
  const StageMemory ring = EstimateMemory(m, t, l, su.cluster).stages[0];
  const double kv = 131072.0 * 4096 * 2 * 2;
  CHECK(gathered.transient_bytes - ring.transient_bytes == doctest::Approx(2 * kv - 4 * kv / 8));
  CHECK(gathered.transient_bytes > 2 * kv);
}

TEST_CASE("interleaved 1F1B: each stage's warm-up as Megatron-LM runs it") {
  Setup su;
  ModelSpec m = TinyGpt();
  m.layers = 16;   // two a chunk
  m.vocab = 1024;  // an LM head of no weight beside the layers
  Training t;
  t.seq_len = 1024;
  t.global_batch = 8;
  Layout l;
  l.pp = 4;
  l.schedule = kScheduleInterleaved;
  l.virtual_stages = 2;
  const MemoryReport r = EstimateMemory(m, t, l, su.cluster);
  // First stage: (p-1) 2 + (v-1) p = 10 chunk forwards, then one more before its first backward:
  // 11 of 2 equal chunks, Korthikanti's p (1 + (p-1)/(p v)) = 5.5 micro-batches.
  CHECK(r.stages[0].in_flight == doctest::Approx(5.5));
  // Last stage: (v-1) p = 4 forwards of its first chunk, then one of its second before the
  // first backward: 4 c0 + c1 of c0 + c1 a micro-batch, 2.5 for equal chunks, a little less as
  // the second also keeps the LM head's input and logits; not the factor's 1 x 1.375.
  CHECK(r.stages[3].in_flight > 2.3);
  CHECK(r.stages[3].in_flight < 2.5);
}

TEST_CASE("multi-token prediction: the LM head's stage keeps its own input embedding") {
  // Megatron-Core builds an embedding on every stage that embeds tokens: stage 0, and under
  // MTP the LM head's (megatron/core/models/gpt/gpt_model.py, pre_process or mtp_process).
  // DualPipe puts both ends on one rank, which shares the table (DeepSeek-V3 Sec. 3.2.1).
  Setup su;
  ModelSpec m = TinyGpt();
  m.layers = 8;
  m.vocab = 32768;
  m.tied_embeddings = false;
  Training t;
  t.seq_len = 1024;
  t.global_batch = 8;
  Layout l;
  l.pp = 4;
  l.tp = 2;
  l.schedule = kSchedule1F1B;
  m.position = PositionKind::kRope;  // no learned positions: the embedding is the table alone
  const double table = static_cast<double>(m.vocab) * m.hidden / l.tp;
  auto last_params = [&](int mtp, const Layout& lay) {
    ModelSpec mm = m;
    mm.mtp_depth = mtp;
    const MemoryReport r = EstimateMemory(mm, t, lay, su.cluster);
    return r.stages.back().params;
  };
  // MTP adds its module (projection, norms, a layer) and the embedding, tied or not (tied,
  // Megatron-Core allocates the head's own table on that stage all the same: its
  // skip_weight_param_allocation holds only where pre_process).
  const double untied = last_params(1, l) - last_params(0, l);
  m.tied_embeddings = true;
  const double tied = last_params(1, l) - last_params(0, l);
  CHECK(tied == doctest::Approx(untied).epsilon(1e-9));
  // DualPipe: the head's rank holds stage 0's embedding too; no copy, the module alone.
  m.tied_embeddings = false;
  Layout dual = l;
  dual.schedule = *FindSchedule("dualpipe");
  t.global_batch = 16;
  const double module = last_params(1, dual) - last_params(0, dual);
  CHECK(module > 0);
  CHECK(untied - module == doctest::Approx(table).epsilon(1e-9));
}

TEST_CASE("FP8 training: Transformer Engine's FP8 weight copies, and FP8 weights gathered as FP8") {
  Seed7b s;
  auto& [su, m, t, l] = s;
  l.zero = 1;
  // The FP8 GEMMs' weights: every Linear of the 32 layers (Q, K, V, O and SwiGLU's three), not
  // the embedding, the LM head or the norms.
  const double h = 4096, linear = 32 * (4 * h * h + 3 * h * 11008);
  ClusterSpec hopper = su.cluster, blackwell = su.cluster;
  hopper.gpu = *su.hw.FindGpu("h100-sxm5-80gb");
  blackwell.gpu = *su.hw.FindGpu("b200");
  auto weights = [&](const ClusterSpec& c) {
    return EstimateMemory(m, t, l, c).stages[0].params_bytes;
  };
  const double bf16 = weights(hopper);
  CHECK(bf16 == doctest::Approx(2 * CountParams(m).total).epsilon(1e-9));
  t.precision = Dtype::kFp8;
  // Beside the bf16 weights a cached FP8 copy: with its transpose on Hopper (FP8 GEMMs there
  // take the TN layout only), without on Blackwell; MXFP8 scales rows and columns apart.
  CHECK(weights(hopper) - bf16 == doctest::Approx(2 * linear).epsilon(1e-9));
  CHECK(weights(blackwell) - bf16 == doctest::Approx(linear).epsilon(1e-9));
  t.fp8_recipe = Fp8Recipe::kMxfp8;
  CHECK(weights(blackwell) - bf16 == doctest::Approx(2 * (1 + 1.0 / 32) * linear).epsilon(1e-9));
  // Not without Transformer Engine (torchao's Float8Linear casts every forward), nor under
  // ZeRO 3, whose copies are made beside the gathered layers, two at a time.
  t.fp8_recipe = Fp8Recipe::kTensorwise;
  t.transformer_engine = false;
  CHECK(weights(hopper) == doctest::Approx(bf16).epsilon(1e-12));
  t.transformer_engine = true;
  l.zero = 3;
  const double sharded = weights(hopper);
  CHECK(sharded == doctest::Approx(bf16 / 8).epsilon(1e-9));
  // Two layers gathered (Llama 2 7B's 32K-token tables are smaller than a layer), each with
  // its FP8 copy beside it; with fp8_param_gather the gathered weights are the FP8 tensors.
  auto gathered = [&](const ClusterSpec& c) {
    return EstimateMemory(m, t, l, c).stages[0].other_bytes;
  };
  const double two_layers = 2 * linear / 32;  // the FP8 GEMMs' weights of two layers
  auto over_bf16 = [&](const ClusterSpec& c) {
    const double fp8 = gathered(c);
    t.precision = Dtype::kBf16;
    const double base = gathered(c);
    t.precision = Dtype::kFp8;
    return fp8 - base;
  };
  CHECK(over_bf16(hopper) == doctest::Approx(2 * two_layers).epsilon(1e-9));
  CHECK(over_bf16(blackwell) == doctest::Approx(two_layers).epsilon(1e-9));
  // fp8_param_gather: the weights are FP8 themselves (sharded under ZeRO 3): a byte and its
  // transpose on Hopper, as many bytes as bf16; one byte on Blackwell, gathered so too.
  t.fp8_param_gather = true;
  CHECK(weights(hopper) == doctest::Approx(sharded).epsilon(1e-12));
  CHECK(weights(blackwell) == doctest::Approx(sharded - linear / 8).epsilon(1e-9));
  CHECK(std::abs(over_bf16(hopper)) < 1e-9 * two_layers);
  // On Blackwell a layer's FP8 weights take one byte: two of its layers weigh less than one
  // 16-bit table and a layer, which is what FSDP2 holds at the loss.
  const ParamCounts pc = CountParams(m);
  const double fp8_layer = 2 * pc.per_dense_layer - linear / 32;
  CHECK(over_bf16(blackwell) ==
        doctest::Approx(2 * pc.embedding + fp8_layer - 2 * 2 * pc.per_dense_layer).epsilon(1e-3));
  l.zero = 1;
  CHECK(weights(hopper) == doctest::Approx(bf16).epsilon(1e-12));
  CHECK(weights(blackwell) == doctest::Approx(bf16 - linear).epsilon(1e-9));
}

}  // namespace
}  // namespace parasim
