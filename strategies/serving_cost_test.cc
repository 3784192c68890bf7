#include "strategies/serving_cost.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "strategies/serving_testing.h"

namespace parasim {
namespace {

ServingCost Cost(const std::string& model, const std::string& gpu, const ServingPrecision& p,
                 const PoolLayout& pool, const EnginePolicy& e = {}) {
  StatusOr<ServingCost> c =
      ServingCost::Build(testing::CatalogModel(model), testing::NodeOf(gpu), p, pool, e);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  return *std::move(c);
}

const ServingPrecision kFp8{ServeDtype::kFp8, ServeDtype::kFp8, ServeDtype::kFp8};

IterationShape Decode(int64_t batch, double context) {
  return {.decode_seqs = batch, .decode_context = batch * context, .sampled = batch};
}

TEST_CASE("a decode step of one sequence reads the weights once") {
  ServingCost c = Cost("llama2-70b", "h200-sxm-141gb", kFp8, {});
  const ServingMemory& m = c.memory();
  // Llama 2 70B in FP8 (its embedding and LM head in 16 bits): about 69 GB on one H200.
  CHECK(m.weights == doctest::Approx(69.0e9).epsilon(0.03));
  // At 4.8 TB/s x 0.896 (device copy measured) x 0.826 (sustained): 19.4 ms, and the kernels'
  // launches on top without a CUDA graph.
  const double read_s = m.weights / (4.8e12 * 0.896 * 0.826);
  const double step = c.StageTime(0, Decode(1, 512), GraphMode::kEager).seconds();
  CHECK(step > read_s);
  CHECK(step < 1.25 * read_s);
  // A CUDA graph removes the launches: a step of 1 sequence within 5% of reading the weights.
  CHECK(c.StageTime(0, Decode(1, 512), GraphMode::kWhole).seconds() ==
        doctest::Approx(read_s).epsilon(0.05));
}

TEST_CASE("seed 002: TP's collective share of a decode step grows as the batch shrinks") {
  ServingCost c = Cost("llama3-70b", "h100-sxm5-80gb", kFp8, {.tp = 8});
  double last = 1;
  for (int64_t batch : {1, 8, 64, 256, 1024}) {
    const StageCost s = c.StageBreakdown(0, Decode(batch, 2048), GraphMode::kWhole);
    const double share = s.comm.seconds() / s.total.seconds();
    CAPTURE(batch);
    CHECK(share < last);
    last = share;
  }
  // One sequence: 160 all-reduces of a few KB, each 14 ring steps at NVLink's latency, are a
  // fifth of a step that reads 9 GB of weights per GPU.
  const StageCost one = c.StageBreakdown(0, Decode(1, 2048), GraphMode::kWhole);
  CHECK(one.comm.seconds() / one.total.seconds() > 0.15);
}

TEST_CASE("prefill is compute-bound: its GEMMs at the FP8 rate") {
  ServingCost c = Cost("llama3-8b", "h100-sxm5-80gb", kFp8, {});
  IterationShape p{.prefill_tokens = 8192, .prefill_pairs = 4 * 2048 * 1024.5, .sampled = 4};
  const StageCost s = c.StageBreakdown(0, p, GraphMode::kEager);
  // 2 x 7.5e9 linear parameters x 8192 tokens at 1979 TFLOP/s x 0.807 x 0.854 x 0.826.
  const double gemm_s = 2 * 7.0e9 * 8192 / (1978.9e12 * 0.807 * 0.854 * 0.826);
  CHECK((s.total - s.attention).seconds() > gemm_s);
  CHECK((s.total - s.attention).seconds() < 1.35 * gemm_s);
  CHECK(s.attention > Duration::Zero());
}

TEST_CASE("CUDA graphs: whole for decode-only iterations, piecewise around the attention") {
  // vLLM V1 (piecewise, up to its largest capture size) against TensorRT-LLM (decode only).
  EnginePolicy vllm;
  vllm.piecewise_graphs = true;
  vllm.graph_max_tokens = 1024;
  ServingCost c = Cost("llama3-8b", "h100-sxm5-80gb", kFp8, {}, vllm);
  IterationShape mixed = Decode(100, 1000);
  mixed.prefill_tokens = 800;
  mixed.prefill_pairs = 800 * 400.5;
  ++mixed.sampled;
  CHECK(c.GraphsFor(mixed) == GraphMode::kPiecewise);
  mixed.prefill_tokens = 1000;  // 1100 tokens: beyond the largest graph, launched one by one
  CHECK(c.GraphsFor(mixed) == GraphMode::kEager);
  mixed.prefill_tokens = 800;
  const StageCost eager = c.StageBreakdown(0, mixed, GraphMode::kEager);
  const StageCost piecewise = c.StageBreakdown(0, mixed, GraphMode::kPiecewise);
  const StageCost whole = c.StageBreakdown(0, mixed, GraphMode::kWhole);
  // The piecewise graph saves the launch of every kernel but the attention's (two a layer here,
  // the prompts' and the decodes'; 4 us each on H100, the catalog's launch overhead), and a
  // whole graph (Megatron-Core's capture of mixed steps) the attention's too.
  const double saved = (eager.total - piecewise.total).seconds();
  CHECK(saved > 32 * 5 * 4e-6);
  CHECK(saved < 32 * 20 * 4e-6);
  CHECK(whole.total.seconds() == doctest::Approx(piecewise.total.seconds() - 2 * 32 * 4e-6));
  CHECK(piecewise.attention == eager.attention);
  EnginePolicy trt;
  ServingCost t = Cost("llama3-8b", "h100-sxm5-80gb", kFp8, {}, trt);
  CHECK(t.GraphsFor(mixed) == GraphMode::kEager);
  CHECK(t.GraphsFor(Decode(100, 1000)) == GraphMode::kWhole);
  CHECK(c.GraphsFor(Decode(2000, 1000)) == GraphMode::kEager);  // beyond vLLM's largest graph
  // A decode-only iteration: the whole graph saves the attention's launches too.
  const double pw = c.StageTime(0, Decode(100, 1000), GraphMode::kPiecewise).seconds();
  const double wh = c.StageTime(0, Decode(100, 1000), GraphMode::kWhole).seconds();
  CHECK(wh == doctest::Approx(pw - 32 * 4e-6).epsilon(1e-3));
  // Megatron-Core's dynamic engine captures steps with prompt tokens whole up to its largest
  // size, and decode-only steps at any.
  EnginePolicy megatron;
  megatron.mixed_graphs = true;
  megatron.graph_max_tokens = 1024;
  ServingCost m = Cost("llama3-8b", "h100-sxm5-80gb", kFp8, {}, megatron);
  CHECK(m.GraphsFor(mixed) == GraphMode::kWhole);
  CHECK(m.GraphsFor(Decode(2000, 1000)) == GraphMode::kWhole);
  mixed.prefill_tokens = 1000;
  CHECK(m.GraphsFor(mixed) == GraphMode::kEager);
}

TEST_CASE("pipeline stages split the layers; memory and what does not fit") {
  ServingCost one = Cost("llama3-70b", "h100-sxm5-80gb", kFp8, {.tp = 2});
  ServingCost two = Cost("llama3-70b", "h100-sxm5-80gb", kFp8, {.tp = 2, .pp = 2});
  const IterationShape it = Decode(64, 1000);
  const double whole = one.StageTime(0, it, GraphMode::kWhole).seconds();
  CHECK(two.StageTime(0, it, GraphMode::kWhole).seconds() ==
        doctest::Approx(whole / 2).epsilon(0.1));
  CHECK(two.stages() == 2);
  CHECK(two.TransferTime(it) > Duration::Zero());
  CHECK(one.TransferTime(it) == Duration::Zero());
  // Half the layers a GPU: twice the KV tokens a replica holds, near enough.
  CHECK(two.memory().kv_per_token == doctest::Approx(one.memory().kv_per_token / 2));
  // 405B in bf16 does not fit an H100; in FP8 on 8 of them it does.
  CHECK_FALSE(Cost("llama3-405b", "h100-sxm5-80gb", {}, {}).memory().fits());
  CHECK(Cost("llama3-405b", "h100-sxm5-80gb", kFp8, {.tp = 8}).memory().fits());
}

TEST_CASE("experts: a few tokens read the experts they reach; data-parallel attention") {
  ServingCost tp = Cost("mixtral-8x7b", "h100-sxm5-80gb", kFp8, {});
  const double one = tp.StageTime(0, Decode(1, 500), GraphMode::kWhole).seconds();
  const double many = tp.StageTime(0, Decode(256, 500), GraphMode::kWhole).seconds();
  // One token reads 2 of 8 experts (and the attention): well under half of what 256 read.
  CHECK(one < 0.5 * many);
  ServingCost dp =
      Cost("mixtral-8x7b", "h100-sxm5-80gb", kFp8, {.tp = 8, .ep = 8, .dp_attention = true});
  // Eight ranks each hold the attention whole and an eighth of the experts, and together
  // eight times the KV of one rank.
  CHECK(dp.memory().kv_tokens > 7 * tp.memory().kv_tokens);
  CHECK(dp.StageBreakdown(0, Decode(256, 500), GraphMode::kWhole).comm > Duration::Zero());
}

TEST_CASE("data-parallel attention: the busiest rank's own ops at its tokens, not the mean's") {
  // DeepSeek-V3 (FP8) on 8 H200 as TP8 with the attention data-parallel: one rank prefills an
  // 8,192-token chunk while seven decode a token each. That rank runs the chunk through its own
  // MLA projections, norms and the first layers' dense MLPs; the experts' all-to-all waits for
  // it. Spread over the ranks (the mean, 1,025 tokens each) the same tokens had been priced.
  ServingCost dp =
      Cost("deepseek-v3", "h200-sxm-141gb", kFp8, {.tp = 8, .ep = 8, .dp_attention = true});
  IterationShape even{.prefill_tokens = 8192,
                      .prefill_pairs = 8192.0 * 8193 / 2,
                      .decode_seqs = 7,
                      .decode_context = 7 * 1000.0,
                      .sampled = 7};
  IterationShape one = even;
  one.ranks.assign(8, Decode(1, 1000));
  one.ranks[0] = {.prefill_tokens = 8192, .prefill_pairs = 8192.0 * 8193 / 2};
  IterationShape spread = even;
  spread.ranks.assign(8,
                      IterationShape{.prefill_tokens = 1024, .prefill_pairs = 1024.0 * 1025 / 2});
  const StageCost a = dp.StageBreakdown(0, one, GraphMode::kEager);
  const StageCost b = dp.StageBreakdown(0, spread, GraphMode::kEager);
  // The busy rank's 7,168 tokens more, each about 30.8 GFLOP through its own ops (61 layers of
  // MLA projections, 187M weights, and a shared expert, 44M; three dense MLPs of 396M): 2.2e14
  // FLOPs, 0.11 s at the H200's dense FP8 peak (1,979 TFLOP/s), 0.56 s at 40% of its 16-bit;
  // and its all-to-all's sends, 7,168 tokens x 8 copies x 7,168 wide, out and back over 58 MoE
  // layers: 48 GB at one byte an element to 95 GB at two, 0.11 s at NVLink's 450 GB/s a
  // direction to 0.42 s at half of it.
  const double more = ((a.total - a.attention) - (b.total - b.attention)).seconds();
  CHECK(more > 0.11 + 0.11);
  CHECK(more < 0.56 + 0.42);
}

TEST_CASE("experts over ep of the tp ranks: whole experts, read whole, the same bytes held") {
  // Mixtral 8x7B on TP2: with EP2 each rank holds 4 whole experts where TP2 holds 8 halves. A
  // token reaches 2 of 8 experts, so the busiest rank reads about one whole expert a layer
  // either way: the step is not faster (it had been priced at half-width experts, 1/ep of
  // their bytes: TPOT below the weights' read time, and EP layouts ranked first).
  const ServingPrecision bf16{ServeDtype::kBf16, ServeDtype::kBf16, ServeDtype::kBf16};
  ServingCost tp = Cost("mixtral-8x7b", "h100-sxm5-80gb", bf16, {.tp = 2});
  ServingCost ep = Cost("mixtral-8x7b", "h100-sxm5-80gb", bf16, {.tp = 2, .ep = 2});
  CHECK(ep.memory().weights == doctest::Approx(tp.memory().weights).epsilon(1e-9));
  const double t1 = tp.StageTime(0, Decode(1, 1000), GraphMode::kWhole).seconds();
  const double t2 = ep.StageTime(0, Decode(1, 1000), GraphMode::kWhole).seconds();
  CHECK(t2 > 0.95 * t1);
  // And never below reading the attention's share and one whole expert a layer from HBM.
  const ModelSpec m = testing::CatalogModel("mixtral-8x7b");
  const double expert = 3.0 * m.hidden * m.moe.expert_ffn_hidden * 2;  // bf16 SwiGLU expert
  CHECK(t2 > m.layers * expert / 3.35e12);
  // Tokens replicated over the TP ranks (no data-parallel attention): no all-to-all moves
  // them, the TP all-reduce combines.
  CHECK(ep.StageBreakdown(0, Decode(1, 1000), GraphMode::kWhole).comm.seconds() ==
        doctest::Approx(tp.StageBreakdown(0, Decode(1, 1000), GraphMode::kWhole).comm.seconds())
            .epsilon(0.05));
  // And at a prompt of 8,000 tokens, where the bytes count: the all-reduce of the block's
  // output, tokens x hidden (it had been sized as every routed copy, top_k x load times more).
  const IterationShape prompt{
      .prefill_tokens = 8000, .prefill_pairs = 8000.0 * 4000.5, .sampled = 1};
  CHECK(ep.StageBreakdown(0, prompt, GraphMode::kEager).comm.seconds() ==
        doctest::Approx(tp.StageBreakdown(0, prompt, GraphMode::kEager).comm.seconds())
            .epsilon(0.05));
}

TEST_CASE("a hybrid model: KV on its attention layers only, a Mamba state per sequence slot") {
  // Nemotron 3 Nano: 6 attention layers of 52, 23 Mamba-2 layers.
  const EnginePolicy e{.max_seqs = 128};
  ServingCost c = Cost("nemotron-3-nano-30b-a3b", "h100-sxm5-80gb", kFp8, {}, e);
  const ServingMemory& m = c.memory();
  // KV: 2 (K, V) x 2 groups x 128 x 1 byte (FP8) on each of the 6 attention layers.
  CHECK(m.kv_per_token == doctest::Approx(6 * 2 * 2 * 128 * 1.0));
  // A slot's state on each Mamba layer: 64 heads x 64 x 128 fp32, and the conv1d's last three
  // inputs over x, B and C (4096 + 2 x 8 x 128 channels) in 16 bits.
  const double slot = 64.0 * 64 * 128 * 4 + (4096 + 2 * 8 * 128) * 3 * 2;
  CHECK(m.states == doctest::Approx(128 * 23 * slot));
  CHECK(c.StateBytesPerSequenceModel() == doctest::Approx(23 * slot));
  CHECK(c.KvBytesPerTokenModel() == doctest::Approx(6 * 2 * 2 * 128 * 1.0));
  // The same model with every Mamba layer an attention layer holds KV on all 29 of them.
  ModelSpec all = testing::CatalogModel("nemotron-3-nano-30b-a3b");
  for (char& ch : all.hybrid) ch = ch == 'M' ? '*' : ch;
  StatusOr<ServingCost> t = ServingCost::Build(all, testing::NodeOf("h100-sxm5-80gb"), kFp8, {}, e);
  REQUIRE(t.ok());
  CHECK(t->memory().kv_per_token == doctest::Approx(29 * 2 * 2 * 128 * 1.0));
  CHECK(t->memory().states == 0);
  // With every attention layer a Mamba layer there is no KV at all: no cache is reported (what
  // is left of the memory is not one), and the batch is bounded by max_seqs alone.
  ModelSpec none = testing::CatalogModel("nemotron-3-nano-30b-a3b");
  for (char& ch : none.hybrid) ch = ch == '*' ? 'M' : ch;
  StatusOr<ServingCost> n =
      ServingCost::Build(none, testing::NodeOf("h100-sxm5-80gb"), kFp8, {}, e);
  REQUIRE(n.ok());
  CHECK(n->memory().kv_per_token == 0);
  CHECK(n->memory().kv_bytes == 0);
  CHECK(n->memory().fits());
  // The trade a hybrid makes: a decode step over short contexts reads 2 MiB of state a sequence
  // on each Mamba layer, more than attention reads of a short KV; over long contexts the state
  // stays, where the attention layers' KV reads grow with every token.
  const double b = 128;
  auto kernels = [&](ServingCost& cost, double context) {
    return cost.StageBreakdown(0, Decode(static_cast<int64_t>(b), context), GraphMode::kWhole)
        .attention.seconds();
  };
  CHECK(kernels(c, 64) > kernels(*t, 64));
  CHECK(kernels(c, 32768) < kernels(*t, 32768));
  // The Mamba updates alone: the state read and written, each sequence's on each Mamba layer.
  const double update = kernels(c, 64) - kernels(*t, 64) * 6.0 / 29;
  CHECK(update > b * 23 * 2 * slot / 3.35e12);  // at most the H100's 3.35 TB/s
  // A prompt's Mamba layers scan it: double the tokens, double the scans' work.
  IterationShape p1{.prefill_tokens = 4096, .prefill_pairs = 4096 * 2048.5, .sampled = 1};
  IterationShape p2{.prefill_tokens = 8192, .prefill_pairs = 8192 * 4096.5, .sampled = 1};
  const double a1 = c.StageBreakdown(0, p1, GraphMode::kEager).attention.seconds();
  const double a2 = c.StageBreakdown(0, p2, GraphMode::kEager).attention.seconds();
  const double t1 = t->StageBreakdown(0, p1, GraphMode::kEager).attention.seconds() * 6 / 29;
  const double t2 = t->StageBreakdown(0, p2, GraphMode::kEager).attention.seconds() * 6 / 29;
  CHECK(a1 - t1 > 1e-4);  // 23 scans of 4096 tokens: 0.3 TFLOP
  CHECK((a2 - t2) == doctest::Approx(2 * (a1 - t1)).epsilon(0.05));
  // Two pipeline stages: each holds the states of its own Mamba layers (12 and 11 of the 23).
  StatusOr<ServingCost> pp =
      ServingCost::Build(testing::CatalogModel("nemotron-3-nano-30b-a3b"),
                         testing::NodeOf("h100-sxm5-80gb"), kFp8, {.pp = 2}, e);
  REQUIRE(pp.ok());
  CHECK(pp->memory().states <= 128 * 12 * slot * 1.0001);
  CHECK(pp->StateBytesPerSequenceModel() == doctest::Approx(23 * slot));
}

TEST_CASE("the GEMM shapes it lists are the ones its iterations ask the cost model for") {
  const ServingPrecision bf16{};
  ServingCost plain = Cost("llama3-8b", "h100-sxm5-80gb", bf16, {.tp = 2});
  const std::vector<ServeGemmShape> at64 = plain.GemmShapes(64);
  // Llama 3 8B on TP2: QKV (4096 + 2 x 1024) / 2 = 3072 wide, the output projection 4096 x 2048,
  // the gated MLP 14336 wide and back, the LM head's half of the vocabulary; 64 rows each.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{3072, 4096},
                      {4096, 2048},
                      {14336, 4096},
                      {4096, 7168},
                      {64128, 4096}}) {
    CAPTURE(n);
    CHECK(std::any_of(at64.begin(), at64.end(),
                      [&](const ServeGemmShape& g) { return g.m == 64 && g.n == n && g.k == k; }));
  }
  // A profile that measured exactly the listed shapes a hundred times slower than the curve
  // prices a decode step of 64 sequences as the catalog does with both GEMM efficiencies a
  // hundredth: every GEMM the replay asks for is a listed one (none falls back to the curve),
  // the experts' rows and the LM head's included, in 16 bits and in FP8.
  auto check = [](const std::string& model, const ServingPrecision& p, const PoolLayout& pool) {
    CAPTURE(model);
    const ClusterSpec c = testing::NodeOf("h100-sxm5-80gb");
    const ModelSpec& m = testing::CatalogModel(model);
    StatusOr<ServingCost> base = ServingCost::Build(m, c, p, pool, {});
    REQUIRE(base.ok());
    const ServeFormats f = ServeFormatsOf(p, c.gpu);
    ClusterSpec measured = c, scaled = c;
    const CostModel cost16(c, Dtype::kBf16), cost8(c, Dtype::kFp8);
    // As calibrate times them: an FP8 GEMM at its rows padded to 16 (the time of m rows).
    auto measure = [&](int64_t tokens) {
      for (const ServeGemmShape& g : base->GemmShapes(tokens)) {
        const bool low = g.quantised && f.compute == Dtype::kFp8;
        const CostModel& cm = low ? cost8 : cost16;
        const int64_t rows = low ? (g.m + 15) / 16 * 16 : g.m;
        measured.gpu.gemm_shapes.push_back(
            {low ? Dtype::kFp8 : Dtype::kBf16, rows, g.n, g.k,
             cm.GemmEfficiency(g.m, g.n, g.k) / 100 * static_cast<double>(rows) / g.m});
      }
    };
    measure(64);
    scaled.gpu.gemm_efficiency_fp8 = c.gpu.Fp8GemmEfficiency() / 100;
    scaled.gpu.gemm_efficiency = c.gpu.gemm_efficiency / 100;
    StatusOr<ServingCost> a = ServingCost::Build(m, measured, p, pool, {});
    StatusOr<ServingCost> b = ServingCost::Build(m, scaled, p, pool, {});
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    const double ta = a->StageTime(0, Decode(64, 500), GraphMode::kWhole).seconds();
    const double tb = b->StageTime(0, Decode(64, 500), GraphMode::kWhole).seconds();
    CHECK(ta == doctest::Approx(tb).epsilon(1e-9));
    CHECK(ta > 10 * base->StageTime(0, Decode(64, 500), GraphMode::kWhole).seconds());
    // Between two listed token counts (32 and 64 are; 48 is not), the interpolated profile is
    // slower than the curve too.
    measure(32);
    StatusOr<ServingCost> both = ServingCost::Build(m, measured, p, pool, {});
    REQUIRE(both.ok());
    CHECK(both->StageTime(0, Decode(48, 500), GraphMode::kWhole).seconds() >
          10 * base->StageTime(0, Decode(48, 500), GraphMode::kWhole).seconds());
  };
  check("llama3-8b", ServingPrecision{}, {.tp = 2});
  check("mixtral-8x7b", kFp8, {});
  check("mixtral-8x7b", kFp8, {.tp = 8, .ep = 8, .dp_attention = true});
  // A weight-only format (FP8 weights, 16-bit activations) reads half the bytes of the 16-bit
  // GEMMs a calibration measured: its quantised GEMMs keep the curve, measurements or not.
  const ServingPrecision w8{ServeDtype::kFp8, ServeDtype::kBf16, ServeDtype::kBf16};
  ServingCost wo = Cost("llama3-8b", "h100-sxm5-80gb", w8, {.tp = 2});
  ClusterSpec slow16 = testing::NodeOf("h100-sxm5-80gb");
  const CostModel c16(slow16, Dtype::kBf16);
  for (const ServeGemmShape& g : wo.GemmShapes(64)) {
    if (g.quantised) {
      slow16.gpu.gemm_shapes.push_back(
          {Dtype::kBf16, g.m, g.n, g.k, c16.GemmEfficiency(g.m, g.n, g.k) / 100});
    }
  }
  StatusOr<ServingCost> wo_measured =
      ServingCost::Build(testing::CatalogModel("llama3-8b"), slow16, w8, {.tp = 2}, {});
  REQUIRE(wo_measured.ok());
  CHECK(wo_measured->StageTime(0, Decode(64, 500), GraphMode::kWhole).seconds() ==
        doctest::Approx(wo.StageTime(0, Decode(64, 500), GraphMode::kWhole).seconds()));
}

TEST_CASE("a routed expert GEMM's live tensors hold top_k copies of the tokens, under TP or EP") {
  // Mixtral 8x7B (hidden 4,096, expert FFN 14,336, top-2 of 8) on TP2 at the 8,192-token
  // budget. TP2 splits every expert: a rank computes all 16,384 routed rows at 4,096 + 14,336
  // columns. EP2 keeps experts whole: a rank computes its 4 experts' rows (8,192 and the busiest
  // rank's excess) at 4,096 + 28,672. A fused MoE kernel's buffers hold them (vLLM's fused_moe:
  // tokens x top_k). They had been the budget's 8,192 rows at the widest expert's columns:
  // EP2 reserved 656 MiB where TP2 reserved 432.
  const EnginePolicy e{.max_num_tokens = 8192};
  const double tp2 =
      Cost("mixtral-8x7b", "h100-sxm5-80gb", kFp8, {.tp = 2}, e).memory().activations;
  const double ep2 =
      Cost("mixtral-8x7b", "h100-sxm5-80gb", kFp8, {.tp = 2, .ep = 2}, e).memory().activations;
  const double io = 8192.0 * 2 * 4096 * 2;  // the layer's input and residual
  CHECK(tp2 >= io + 16384.0 * (4096 + 14336) * 2);
  CHECK(ep2 >= io + 8192.0 * (4096 + 28672) * 2);
  CHECK(std::abs(ep2 / tp2 - 1) < 0.15);
}

TEST_CASE("expert parallelism at a few sequences waits for the rank reading the most experts") {
  // Mixtral 8x7B (bf16) on TP8: with the experts split over TP (ep 1) every rank reads an eighth
  // of the two experts a token picks; over EP8 the two ranks holding them read one whole expert
  // each (352 MB a layer), four times the eighth. A decode step of one sequence had priced the
  // mean rank's quarter of an expert, the same as TP's (2.24 ms both).
  const ServingPrecision bf16{};
  ServingCost tp = Cost("mixtral-8x7b", "h200-sxm-141gb", bf16, {.tp = 8});
  ServingCost ep = Cost("mixtral-8x7b", "h200-sxm-141gb", bf16, {.tp = 8, .ep = 8});
  const double t1 = tp.StageTime(0, Decode(1, 64), GraphMode::kWhole).seconds();
  const double e1 = ep.StageTime(0, Decode(1, 64), GraphMode::kWhole).seconds();
  CHECK(e1 > 1.6 * t1);
  // At a large batch every rank reads all its experts: the two layouts read the same bytes.
  const double t256 = tp.StageTime(0, Decode(256, 64), GraphMode::kWhole).seconds();
  const double e256 = ep.StageTime(0, Decode(256, 64), GraphMode::kWhole).seconds();
  CHECK(e256 == doctest::Approx(t256).epsilon(0.15));
  // The routed GEMMs compute every token's top_k copies: rows x experts read = tokens x top_k.
  int fc1 = 0;
  for (const ServeGemmShape& g : tp.GemmShapes(1)) {
    if (g.n != 2 * 14336 / 8) continue;
    ++fc1;
    CHECK(g.m == 2);
  }
  CHECK(fc1 == 1);
}

TEST_CASE("an eager engine's host calls bound its steps, at the host's rate") {
  // Megatron-LM's engine as its cases state it: 9.1 framework ops of the host a call (fitted on
  // the training half of its inference tests, tools/megatron_ci/fit_inference_overhead.py).
  EnginePolicy eager;
  eager.cuda_graphs = false;
  eager.host_ops_per_op = 9.1;
  const ClusterSpec h100 = testing::NodeOf("h100-sxm5-80gb");
  auto cost = [&](const std::string& model, const ClusterSpec& c, const PoolLayout& pool,
                  const EnginePolicy& e) {
    StatusOr<ServingCost> out = ServingCost::Build(testing::CatalogModel(model), c, {}, pool, e);
    REQUIRE_MESSAGE(out.ok(), out.status().message());
    return *std::move(out);
  };
  const IterationShape one = Decode(1, 100);
  ServingCost dense = cost("llama3-8b", h100, {}, eager);
  const StageCost s = dense.StageBreakdown(0, one, GraphMode::kEager);
  // One sequence of an 8B model: its 32 layers' calls (about ten a layer at 312 us) take far
  // longer than the GPU's 16 GB of weights (5 ms): the step is the host's.
  const double unit = 9.1 * h100.gpu.host_op_time.seconds();
  CHECK(s.host.seconds() > 32 * 8 * unit);
  CHECK(s.host.seconds() < 32 * 16 * unit);
  CHECK(s.total == s.host);
  // An engine whose host keeps ahead (the default) pays none; the GPU's time is the step's.
  ServingCost ahead = cost("llama3-8b", h100, {}, {});
  const StageCost g = ahead.StageBreakdown(0, one, GraphMode::kEager);
  CHECK(g.host == Duration::Zero());
  CHECK(g.total < s.total * 0.1);
  // A large prompt chunk is the GPU's again: the host runs ahead of it.
  IterationShape prompt;
  prompt.prefill_tokens = 8192;
  prompt.prefill_pairs = 8192.0 * 4096.5;
  prompt.sampled = 1;
  const StageCost p = dense.StageBreakdown(0, prompt, GraphMode::kEager);
  CHECK(p.total > p.host);
  CHECK(p.total == ahead.StageBreakdown(0, prompt, GraphMode::kEager).total);
  // A slower host (the catalog's Grace, 1.39x a DGX H100's op) issues slower, call for call.
  ClusterSpec slow = h100;
  slow.gpu.host_op_time = h100.gpu.host_op_time * 1.5;
  const StageCost sl = cost("llama3-8b", slow, {}, eager).StageBreakdown(0, one, GraphMode::kEager);
  CHECK(sl.host.seconds() == doctest::Approx(1.5 * s.host.seconds()));
  // TP adds a call for each all-reduce: two a layer, and the embedding's.
  ServingCost tp2 = cost("llama3-8b", h100, {.tp = 2}, eager);
  const double added = (tp2.StageBreakdown(0, one, GraphMode::kEager).host - s.host).seconds();
  CHECK(added == doctest::Approx((2 * 32 + 1) * unit));
  // A MoE layer calls more modules than a dense one: the router, the dispatch's permutation and
  // the combine beside the experts' two GEMMs and activation (Mixtral's 32 layers, as many as
  // Llama 3 8B's).
  ServingCost moe = cost("mixtral-8x7b", h100, {.tp = 2, .ep = 2}, eager);
  const double more = (moe.StageBreakdown(0, one, GraphMode::kEager).host -
                       tp2.StageBreakdown(0, one, GraphMode::kEager).host)
                          .seconds() /
                      (32 * unit);
  CHECK(more >= 3);
  // Inside a whole graph the host calls the head alone (the final norm, the LM head, the
  // sampler); a piecewise graph the attention cores between its pieces too. Launches cost
  // host_ops_per_graph (none here).
  CHECK(dense.StageBreakdown(0, one, GraphMode::kWhole).host.seconds() ==
        doctest::Approx(3 * unit));
  const double pw = dense.StageBreakdown(0, one, GraphMode::kPiecewise).host.seconds() / unit;
  CHECK(pw == doctest::Approx(32 + 3));
  // A hybrid's piecewise graph splits at every mixer, attention or Mamba: a launch a piece.
  const ModelSpec hybrid = testing::CatalogModel("nemotron-3-nano-30b-a3b");
  int mixers = 0;
  for (int i = 0; i < hybrid.layers; ++i) {
    mixers += hybrid.KindOf(i) == LayerKind::kMamba || hybrid.KindOf(i) == LayerKind::kAttention;
  }
  EnginePolicy launches_only;
  launches_only.piecewise_graphs = true;
  launches_only.host_ops_per_graph = 1;
  StatusOr<ServingCost> nano = ServingCost::Build(hybrid, h100, kFp8, {}, launches_only);
  REQUIRE_MESSAGE(nano.ok(), nano.status().message());
  CHECK(nano->StageBreakdown(0, one, GraphMode::kPiecewise).host.seconds() ==
        doctest::Approx((mixers + 1) * h100.gpu.host_op_time.seconds()));
  // Megatron-Core's layer-scoped graphs: a launch a layer, the embedding's and the head's calls
  // eager, and their kernels' launch overhead kept.
  EnginePolicy layered = eager;
  layered.layer_graphs = true;
  layered.host_ops_per_graph = 5.31;
  ServingCost mcore = cost("llama3-8b", h100, {}, layered);
  const StageCost lg = mcore.StageBreakdown(0, one, GraphMode::kWhole);
  const double graph = 5.31 * h100.gpu.host_op_time.seconds();
  const double embedding = lg.host.seconds() - 32 * graph - 3 * unit;
  CHECK(embedding > 0.5 * unit);
  CHECK(embedding < 12 * unit);
  EnginePolicy whole = layered;
  whole.layer_graphs = false;
  const StageCost wg = cost("llama3-8b", h100, {}, whole).StageBreakdown(0, one, GraphMode::kWhole);
  CHECK(wg.host.seconds() == doctest::Approx(graph + 3 * unit));
  // The GPU's side: the layers' kernels launch inside their graphs, the embedding's and the
  // head's as ever.
  ServingCost gpu_layered = cost("llama3-8b", h100, {}, [] {
    EnginePolicy e;
    e.layer_graphs = true;
    return e;
  }());
  const double saved = (gpu_layered.StageBreakdown(0, one, GraphMode::kWhole).total -
                        ahead.StageBreakdown(0, one, GraphMode::kWhole).total)
                           .seconds();
  CHECK(saved > 0);
  CHECK(saved < 20 * 4e-6);
}

}  // namespace
}  // namespace parasim
