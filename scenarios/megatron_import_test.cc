#include "scenarios/megatron_import.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace parasim {
namespace {

// A workspace file in the test's runfiles.
std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/parasim/" + path;
}

const Catalogs& Cat() {
  static const Catalogs cat = *LoadCatalogs();
  return cat;
}

StatusOr<ImportedScenario> Import(const std::string& text, ImportOptions o = {}) {
  if (o.gpu.empty()) o.gpu = "h100-sxm5-80gb";
  PARASIM_ASSIGN_OR_RETURN(MegatronArgs a, ParseMegatronArgs("args.txt", text));
  return ImportMegatron(a, o, Cat());
}

StatusOr<ImportedScenario> ImportFixture(const std::string& name, ImportOptions o) {
  PARASIM_ASSIGN_OR_RETURN(MegatronArgs a,
                           ReadMegatronArgs(Runfile("tests/fixtures/megatron/" + name)));
  return ImportMegatron(a, o, Cat());
}

// A small dense model's flags; each test adds its own.
const std::string kBase =
    "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
    "--max-position-embeddings 2048 --micro-batch-size 1 --vocab-size 50257 --bf16 ";

bool Line(const ImportedScenario& s, const std::string& text) {
  return s.yaml.find(text) != std::string::npos;
}

TEST_CASE("a functional-test config: MoE with MLA, MTP and a pipeline layout") {
  auto s = ImportFixture("moe_model_config.yaml", {.gpu = "h100-sxm5-80gb", .nodes = 2});
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const Scenario& sc = s->scenario;
  CHECK(sc.cluster.gpus() == 16);
  CHECK(sc.model.layers == 14);
  CHECK(sc.model.moe.experts == 32);
  CHECK(sc.model.moe.top_k == 4);
  CHECK(sc.model.moe.dense_layers == 2);
  CHECK(sc.model.moe.every == 1);
  CHECK(sc.model.moe.shared_experts == 1);
  CHECK(sc.model.moe.expert_ffn_hidden == 1024);
  CHECK(sc.model.mla.kv_lora_rank == 256);
  CHECK(sc.model.mla.q_lora_rank == 768);
  CHECK(sc.model.mla.qk_rope_head_dim == 32);
  CHECK(sc.model.mtp_depth == 1);
  CHECK(sc.model.vocab == 32000);  // a multiple of 128 x TP 1 already
  CHECK(!sc.model.tied_embeddings);
  CHECK(sc.layout.pp == 2);
  CHECK(sc.layout.dp == 8);
  CHECK(sc.layout.ep == 8);
  CHECK(sc.layout.etp == 1);
  CHECK(sc.layout.zero == 1);
  CHECK(sc.layout.overlap_dp);
  CHECK(sc.layout.stage_layers == std::vector<int>{6, 8});
  CHECK(sc.training.recompute == RecomputeKind::kDeepseek);
  CHECK(sc.training.per_expert_gemm);
  CHECK(sc.training.fused_cross_entropy);
  CHECK(sc.training.grad_dtype == Dtype::kFp32);  // --bf16: fp32 main gradients
  CHECK(sc.training.attention == AttentionKind::kFlash);
  CHECK(sc.training.global_batch == 64);
  CHECK(sc.training.tokens == 100.0 * 64 * 4096);
  CHECK(Line(*s, "stage_layers: [6, 8]"));
  CHECK(Line(*s, "# --pipeline-model-parallel-layout Et*6|t*8mL"));
  CHECK(sc.training.deterministic);
  CHECK(Line(*s, "deterministic: true"));
  CHECK(Line(*s, "# --deterministic-mode"));
  CHECK(Line(*s, "NCCL_ALGO=Ring"));
  CHECK(Line(*s, "--lr"));  // with no effect, listed
}

TEST_CASE("a launch script: torchrun's shape, GPT-2's vocabulary padded to 128 x TP") {
  auto s = ImportFixture("train_gpt.sh", {.gpu = "h100-sxm5-80gb"});
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const Scenario& sc = s->scenario;
  CHECK(sc.cluster.nodes == 4);
  CHECK(sc.cluster.gpus_per_node == 8);
  CHECK(sc.layout.tp == 4);
  CHECK(sc.layout.pp == 2);
  CHECK(sc.layout.dp == 4);
  CHECK(sc.layout.sp);
  // 50257 rounded up to a multiple of 128 x 4 = 512.
  CHECK(sc.model.vocab == 50688);
  CHECK(sc.model.tied_embeddings);
  CHECK(sc.model.bias == 1);
  CHECK(sc.model.ffn_hidden == 4 * 2048);
  CHECK(sc.training.micro_batch == 2);
}

TEST_CASE("a plain list: GQA, FP8, block recompute and context parallelism") {
  auto s = ImportFixture("llama_flags.txt", {.gpu = "h100-sxm5-80gb", .nodes = 2});
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const Scenario& sc = s->scenario;
  CHECK(sc.model.kv_heads == 8);
  CHECK(sc.model.vocab == 32000);  // Llama2Tokenizer
  CHECK(sc.model.mlp == MlpKind::kSwiglu);
  CHECK(sc.model.norm == NormKind::kRmsNorm);
  CHECK(sc.model.position == PositionKind::kRope);
  CHECK(sc.training.precision == Dtype::kFp8);
  CHECK(sc.training.fp8_recipe == Fp8Recipe::kTensorwise);
  CHECK(sc.training.recompute == RecomputeKind::kFull);
  CHECK(sc.training.recompute_layers == 4);
  CHECK(sc.layout.cp == 2);
  CHECK(sc.layout.dp == 4);
  CHECK(!sc.layout.overlap_dp);  // no --overlap-grad-reduce
}

TEST_CASE("node-limited sends are the flex dispatcher's: alltoall sends a copy per expert") {
  // Mixtral-like experts, EP16 over two 8-GPU nodes. Megatron-LM's alltoall dispatcher sends one
  // row per (token, expert) (MoEAlltoAllTokenDispatcher), so group-limited routing changes no
  // bytes; DeepEP under the flex dispatcher sends a token once to each node it reaches. The
  // import had read the groups as node-limited sends under any dispatcher (the EP all-to-all
  // at half its bytes: 4.33 ms where 8.62).
  const std::string moe =
      kBase +
      "--num-experts 16 --moe-router-topk 2 --expert-model-parallel-size 16 "
      "--global-batch-size 16 --moe-router-num-groups 2 --moe-router-group-topk 1 ";
  ImportOptions two;
  two.nodes = 2;
  auto a2a = Import(moe + "--moe-token-dispatcher-type alltoall", two);
  REQUIRE_MESSAGE(a2a.ok(), a2a.status().message());
  CHECK(a2a->scenario.model.moe.node_limit == 0);
  bool listed = false;
  for (const UnappliedFlag& f : a2a->not_modelled) {
    listed |= f.flag == "--moe-router-num-groups" && f.why.find("alltoall") != std::string::npos;
  }
  CHECK(listed);
  auto flex = Import(moe + "--moe-token-dispatcher-type flex", two);
  REQUIRE_MESSAGE(flex.ok(), flex.status().message());
  CHECK(flex->scenario.model.moe.node_limit == 1);
  // Without groups DeepEP still sends a token once a node: every node the EP group spans.
  auto dedup = Import(kBase +
                          "--num-experts 16 --moe-router-topk 2 --global-batch-size 16 "
                          "--expert-model-parallel-size 16 --moe-token-dispatcher-type flex",
                      two);
  REQUIRE_MESSAGE(dedup.ok(), dedup.status().message());
  CHECK(dedup->scenario.model.moe.node_limit == 2);
}

TEST_CASE("Megatron-LM's defaults where flags are absent") {
  auto s = Import(kBase + "--swiglu --global-batch-size 8");
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  // SwiGLU's default width: 8h/3 rounded down to 64 (2730 -> 2688).
  CHECK(s->scenario.model.ffn_hidden == 2688);
  CHECK(s->scenario.model.vocab == 50304);  // 50257 to a multiple of 128
  CHECK(s->scenario.layout.dp == 8);
  CHECK(s->scenario.layout.zero == 0);
  CHECK(s->scenario.training.attention == AttentionKind::kFlash);
  CHECK(s->scenario.training.transformer_engine);
  CHECK(s->scenario.training.blas_workspace.bytes() == 0);
  auto local = Import(kBase + "--transformer-impl local");
  REQUIRE(local.ok());
  CHECK(local->scenario.training.attention == AttentionKind::kStandard);
  CHECK_FALSE(local->scenario.training.transformer_engine);
  CHECK(Line(*local, "transformer_engine: false"));
  CHECK(local->scenario.training.global_batch == 8);  // micro-batch x DP
  auto unfused = Import(kBase + "--attention-backend unfused --no-gradient-accumulation-fusion");
  REQUIRE(unfused.ok());
  CHECK(unfused->scenario.training.attention == AttentionKind::kStandard);
  CHECK(unfused->scenario.training.grad_accumulation == GradAccumulation::kSeparate);
}

TEST_CASE("CUBLAS_WORKSPACE_CONFIG sizes the cuBLAS workspace; other variables are listed") {
  // PyTorch's format: the sum of SIZE KiB x COUNT over the :SIZE:COUNT pairs.
  struct Row {
    const char* value;
    double bytes;  // 0: PyTorch's default (nothing written)
  };
  for (Row r : {Row{":4096:8", 32.0 * 1024 * 1024}, Row{":4096:2:16:8", 8.125 * 1024 * 1024},
                Row{":16:8", 128.0 * 1024}, Row{"garbage", 0}}) {
    CAPTURE(r.value);
    auto s = Import("export CUBLAS_WORKSPACE_CONFIG=" + std::string(r.value) +
                    "\nexport NCCL_ALGO=Ring\ntorchrun pretrain_gpt.py " + kBase + "\n");
    REQUIRE_MESSAGE(s.ok(), s.status().message());
    CHECK(s->scenario.training.blas_workspace.bytes() == r.bytes);
    CHECK(Line(*s, "NCCL_ALGO=Ring"));  // still listed as not modelled
    CHECK(Line(*s, "#   CUBLAS_WORKSPACE_CONFIG") == (r.bytes == 0));
  }
}

TEST_CASE("the program a launch script runs: other models than decoder stacks are refused") {
  // A BERT launch had imported as a GPT of the same sizes, exit 0.
  struct Row {
    const char* program;
    const char* names;  // in the message; "" = imports
  };
  for (Row r : {Row{"pretrain_bert.py", "BERT"}, Row{"examples/t5/pretrain_t5.py", "T5"},
                Row{"pretrain_vlm.py", "vision-language"}, Row{"./examples/mimo/train.py", "MIMO"},
                Row{"examples/multimodal/train.py", "LLaVA"}, Row{"train_rl.py", "GRPO"},
                Row{"examples/inference/advanced/gpt_dynamic_inference.py", "parasim serve"},
                Row{"pretrain_gpt.py", ""}, Row{"pretrain_mamba.py", ""},
                Row{"pretrain_hybrid.py", ""}, Row{"my_wrapper.py", ""}}) {
    CAPTURE(r.program);
    auto s = Import("export NCCL_ALGO=Ring\ntorchrun --nproc_per_node 8 " + std::string(r.program) +
                    " " + kBase + "\n");
    if (*r.names == 0) {
      CHECK_MESSAGE(s.ok(), s.status().message());
      continue;
    }
    REQUIRE_FALSE(s.ok());
    const std::string m(s.status().message());
    CHECK(m.find("args.txt:2:29: error: " + std::string(r.program)) == 0);
    CHECK(m.find(r.names) != std::string::npos);
    CHECK(m.find("decoder-only") != std::string::npos);
  }
  // A flag list names no program: it imports as before.
  CHECK(Import(kBase).ok());
}

TEST_CASE("virtual stages, uneven first and last stages, the rank order") {
  auto v = Import(kBase +
                  "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 "
                  "--global-batch-size 16");
  REQUIRE_MESSAGE(v.ok(), v.status().message());
  CHECK(v->scenario.layout.virtual_stages == 2);
  CHECK(v->scenario.layout.schedule == kScheduleInterleaved);
  CHECK(v->scenario.layout.microbatch_group == 0);  // Megatron-Core's default: pp
  CHECK(v->scenario.layout.param_gather == Layout::ParamGather::kAuto);
  CHECK(v->scenario.layout.param_gather_resolved() == Layout::ParamGather::kAligned);
  // Each stage gathering its chunks' parameters as it goes, not aligned across stages.
  auto na = Import(kBase +
                   "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 "
                   "--global-batch-size 16 --use-distributed-optimizer --overlap-grad-reduce "
                   "--overlap-param-gather --no-align-param-gather");
  REQUIRE_MESSAGE(na.ok(), na.status().message());
  CHECK(na->scenario.layout.param_gather == Layout::ParamGather::kOnDemand);
  CHECK(Line(*na, "param_gather: on_demand"));
  CHECK(Line(*na, "--no-align-param-gather"));
  // Interleaving's micro-batch group; of no effect (read, not set) without virtual stages.
  auto g = Import(kBase +
                  "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 "
                  "--global-batch-size 12 --microbatch-group-size-per-virtual-pipeline-stage 3");
  REQUIRE_MESSAGE(g.ok(), g.status().message());
  CHECK(g->scenario.layout.microbatch_group == 3);
  CHECK(Line(*g, "microbatch_group: 3"));
  CHECK(Line(*g, "--microbatch-group-size-per-virtual-pipeline-stage 3"));
  auto one = Import(kBase +
                    "--pipeline-model-parallel-size 2 --global-batch-size 12 "
                    "--microbatch-group-size-per-virtual-pipeline-stage 3");
  REQUIRE_MESSAGE(one.ok(), one.status().message());
  CHECK(one->scenario.layout.microbatch_group == 0);
  // With a --pipeline-model-parallel-layout of pp x vp segments too.
  auto lay = Import(kBase +
                    "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout "
                    "'Et|t|t|tL' --global-batch-size 12 "
                    "--microbatch-group-size-per-virtual-pipeline-stage 3");
  REQUIRE_MESSAGE(lay.ok(), lay.status().message());
  CHECK(lay->scenario.layout.virtual_stages == 2);
  CHECK(lay->scenario.layout.microbatch_group == 3);
  auto fl = Import(
      "--num-layers 10 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
      "--max-position-embeddings 2048 --vocab-size 50257 --pipeline-model-parallel-size 4 "
      "--decoder-first-pipeline-num-layers 2 --decoder-last-pipeline-num-layers 2 "
      "--use-tp-pp-dp-mapping");
  REQUIRE_MESSAGE(fl.ok(), fl.status().message());
  CHECK(fl->scenario.layout.stage_layers == std::vector<int>{2, 3, 3, 2});
  CHECK(fl->scenario.layout.order[3] == RankDim::kPp);
}

TEST_CASE("a hybrid pattern: Mamba-2 and attention layers, '|' segments, MTP parts") {
  // Megatron-LM's hybrid functional test's pattern (hybrid_mr_mcore_te_tp1_pp2_vpp2): four
  // segments of 11 over two stages, two virtual stages each; no --num-layers (the pattern
  // counts them), the Mamba sizes at their defaults.
  auto s = Import(
      "--hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 4 "
      "--global-batch-size 32 --max-position-embeddings 1024 "
      "--vocab-size 131072 --bf16 --pipeline-model-parallel-size 2 --is-hybrid-model "
      "--spec megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec "
      "--hybrid-layer-pattern 'M-M-M-M*-M-|M-M-M*-M-M-|M-M*-M-M-M-|M*-M-M-M-M-'",
      {.gpu = "h100-sxm5-80gb", .nodes = 1});
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const ModelSpec& m = s->scenario.model;
  CHECK(m.layers == 44);
  CHECK(m.hybrid == "M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M-");
  CHECK(m.mamba_heads() == 32);  // 2 x 1024 / 64
  CHECK(m.mamba.state_dim == 128);
  CHECK(m.mamba.groups == 8);
  CHECK(m.KindOf(0) == LayerKind::kMamba);
  CHECK(m.KindOf(1) == LayerKind::kMlp);
  CHECK(m.KindOf(7) == LayerKind::kAttention);
  CHECK(s->scenario.layout.stage_layers == std::vector<int>{22, 22});
  CHECK(s->scenario.layout.virtual_stages == 2);
  CHECK(Line(*s, "pattern: M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M-"));
  CHECK(Line(*s, "# --hybrid-layer-pattern"));
  CHECK(Line(*s, "# Megatron-LM's default (2 x hidden / head dim)"));
  // The spec and --is-hybrid-model are read, not listed as unmodelled.
  for (const UnappliedFlag& f : s->not_modelled) {
    CHECK(f.flag != "--spec");
    CHECK(f.flag != "--is-hybrid-model");
  }

  // MTP parts after '/', MoE layers, Mamba flags.
  auto moe =
      Import(kBase +
             "--num-experts 8 --moe-router-topk 2 --mamba-num-heads 16 --mamba-head-dim 64 "
             "--mamba-state-dim 32 --mamba-num-groups 4 --hybrid-layer-pattern 'MEM*E/*E/*E'");
  REQUIRE_MESSAGE(moe.ok(), moe.status().message());
  CHECK(moe->scenario.model.layers == 5);  // --num-layers 4 is the pattern's 5
  CHECK(moe->scenario.model.mtp_depth == 2);
  CHECK(moe->scenario.model.mamba_inner() == 1024);
  CHECK(moe->scenario.model.IsMoeLayer(1));
  // Megatron-LM takes the pattern's MTP depth over --mtp-num-layers (and warns): listed.
  auto depth = Import(kBase + "--hybrid-layer-pattern 'M-/*-' --mtp-num-layers 2");
  REQUIRE_MESSAGE(depth.ok(), depth.status().message());
  CHECK(depth->scenario.model.mtp_depth == 1);
  CHECK(Line(*depth, "the pattern's 1 multi-token-prediction parts are the depth"));
  CHECK(!moe->scenario.model.IsMoeLayer(2));
}

TEST_CASE("errors name the flag's file:line:col and what would be accepted") {
  struct Bad {
    std::string args;
    std::string message;
  };
  for (const Bad& b : std::vector<Bad>{
           {kBase + "--num-layer 4",
            "unknown Megatron-LM flag '--num-layer' (did you mean "
            "'--num-layers'?)"},
           {kBase + "--fp16", "--fp16: contradicts --bf16"},
           {kBase + "--tensor-model-parallel-size 3",
            "tp x pp x cp = 3 x 1 x 1 = 3 does not divide the cluster's 8 GPUs"},
           {kBase + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*3|ttL'",
            "places 5 decoder layers (t), --num-layers 4"},
           {kBase + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et|t|tL'",
            "3 segments do not split over --pipeline-model-parallel-size 2"},
           {kBase + "--hybrid-layer-pattern M-G-", "layer symbol 'G': parasim builds M"},
           {kBase + "--hybrid-layer-pattern 'M-|M-' --pipeline-model-parallel-size 2 "
                    "--num-layers-per-virtual-pipeline-stage 1",
            "refuses it beside a hybrid pattern: the pattern's '|' segments place the layers"},
           {kBase + "--hybrid-layer-pattern 'M-|M-|M-' --pipeline-model-parallel-size 2",
            "3 '|' segments do not split over --pipeline-model-parallel-size 2"},
           {kBase + "--hybrid-layer-pattern M-M-M --pipeline-model-parallel-size 2",
            "5 layers do not split evenly over --pipeline-model-parallel-size 2"},
           {kBase + "--hybrid-layer-pattern 'M-/*-/M-'",
            "multi-token-prediction module 'M-': parasim builds one attention layer and the MLP"},
           {kBase + "--hybrid-layer-pattern 'M-|M-' --pipeline-model-parallel-size 1",
            "2 '|' segments on one pipeline stage: virtual stages need"},
           {kBase + "--hybrid-layer-pattern M-M- --pipeline-model-parallel-size 2 "
                    "--account-for-loss-in-pipeline-split",
            "--account-for-loss-in-pipeline-split: Megatron-LM refuses it beside a hybrid "
            "pattern"},
           {kBase + "--hybrid-layer-pattern M- --hidden-size 1000 --mamba-head-dim 48",
            "48 does not divide 2000: give --mamba-num-heads"},
           {kBase + "--hybrid-layer-pattern M- --hybrid-override-pattern M-",
            "contradicts --hybrid-layer-pattern: give one pattern"},
           {kBase + "--sequence-parallel yes", "--sequence-parallel: takes no value"},
           {kBase + "--global-batch-size 12",
            "12 is not a multiple of --micro-batch-size 1 x "
            "data-parallel 8"},
           {kBase + "--attention-backend flashy", "(did you mean 'flash'?)"},
           {kBase + "--num-experts 8 --expert-model-parallel-size 3",
            "(the imported scenario's parallelism.ep)"},
       }) {
    CAPTURE(b.args);
    auto s = Import(b.args);
    REQUIRE(!s.ok());
    CHECK(s.status().message().find("args.txt:1:") == 0);
    CAPTURE(s.status().message());
    CHECK(s.status().message().find(b.message) != std::string::npos);
  }
  auto no_vocab = Import(
      "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
      "--tokenizer-type GPTSentencePieceTokenizer");
  REQUIRE(!no_vocab.ok());
  CHECK(no_vocab.status().message().find("give --vocab-size N") != std::string::npos);
  auto given = Import(
      "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
      "--max-position-embeddings 2048 --tokenizer-type GPTSentencePieceTokenizer",
      {.gpu = "h100-sxm5-80gb", .vocab = 129280});
  REQUIRE(given.ok());
  CHECK(given->scenario.model.vocab == 129280);
}

TEST_CASE("micro-batch x data-parallel too large for a step is refused, not divided by zero") {
  // A bug hunt's inputs (2026-11-29): 1073741824 x 16777216 x 1024 wrapped to 0 (SIGFPE).
  for (const std::string gb : {"", "--global-batch-size 5 "}) {
    auto s = Import(kBase + gb + "--micro-batch-size 1073741824",
                    {.gpu = "h100-sxm5-80gb", .nodes = 16777216, .gpus_per_node = 1024});
    REQUIRE(!s.ok());
    CHECK(s.status().message().find("args.txt:1:") == 0);
    CHECK(s.status().message().find("--micro-batch-size: --micro-batch-size 1073741824 x "
                                    "data-parallel 17179869184 is over") != std::string::npos);
  }
}

TEST_CASE("--num-query-groups without --group-query-attention stays multi-head attention") {
  // megatron/training/argument_utils.py passes num_query_groups only under
  // --group-query-attention.
  auto s = Import(kBase + "--num-query-groups 4");
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s->scenario.model.kv_heads != 4);  // 0: one per head
  CHECK(!Line(*s, "kv_heads: 4"));
  CHECK(Line(*s, "--num-query-groups 4: has no effect without --group-query-attention"));
  auto g = Import(kBase + "--num-query-groups 4 --group-query-attention");
  REQUIRE_MESSAGE(g.ok(), g.status().message());
  CHECK(g->scenario.model.kv_heads == 4);
}

TEST_CASE("--moe-layer-freq: layer i is MoE where i % N == 0; never another count") {
  const std::string moe = "--num-experts 8 ";
  // A list parasim's placement gives exactly: dense layers, then every k-th.
  auto list = Import(kBase + moe + "--moe-layer-freq '[0,1,0,1]'");
  REQUIRE_MESSAGE(list.ok(), list.status().message());
  CHECK(list->scenario.model.moe.dense_layers == 0);
  CHECK(list->scenario.model.moe.every == 2);
  CHECK(list->not_modelled.empty() == false);  // the dispatcher, at least
  for (const UnappliedFlag& f : list->not_modelled) CHECK(f.flag != "--moe-layer-freq");
  auto lead = Import(kBase + moe + "--moe-layer-freq '([0]*1+[1]*3)'");
  REQUIRE_MESSAGE(lead.ok(), lead.status().message());
  CHECK(lead->scenario.model.moe.dense_layers == 1);
  CHECK(lead->scenario.model.moe.every == 1);
  // An int N dividing the layers: the same count and spacing, one place later; said so.
  auto two = Import(kBase + moe + "--moe-layer-freq 2");
  REQUIRE_MESSAGE(two.ok(), two.status().message());
  CHECK(two->scenario.model.moe.dense_layers == 0);
  CHECK(two->scenario.model.moe.every == 2);
  int moe_layers = 0;
  for (int i = 0; i < 4; ++i) moe_layers += two->scenario.model.IsMoeLayer(i) ? 1 : 0;
  CHECK(moe_layers == 2);
  CHECK(Line(*two, "Megatron-LM makes layers 0, 2, 4, ... MoE, parasim the last of each 2"));
  // Counts parasim cannot give: refused.
  for (const std::string bad :
       {"--num-layers 5 --moe-layer-freq 2", "--num-layers 8 --moe-layer-freq 3",
        "--moe-layer-freq '[1,0,0,1]'", "--moe-layer-freq '[0,1,1,0]'"}) {
    CAPTURE(bad);
    auto s = Import(kBase + moe + bad);
    REQUIRE(!s.ok());
    CHECK(s.status().message().find("which parasim cannot place") != std::string::npos);
  }
}

TEST_CASE("Megatron-LM's own refusals are errors at the flag") {
  // megatron/training/arguments.py, validate_args.
  struct Bad {
    std::string args;
    std::string message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"--num-layers-per-virtual-pipeline-stage 2",
            "--num-layers-per-virtual-pipeline-stage: gives 2 virtual stages with "
            "--pipeline-model-parallel-size 1"},
           {"--num-virtual-stages-per-pipeline-rank 2",
            "--num-virtual-stages-per-pipeline-rank: gives 2 virtual stages"},
           {"--pipeline-model-parallel-layout 'Et|tt|tL'",
            "--pipeline-model-parallel-layout: gives 3 virtual stages"},
           {"--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 "
            "--num-layers-per-virtual-pipeline-stage 1",
            "--num-virtual-stages-per-pipeline-rank: contradicts "
            "--num-layers-per-virtual-pipeline-stage"},
           {"--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et|t|t|tL' "
            "--num-virtual-stages-per-pipeline-rank 2",
            "--num-virtual-stages-per-pipeline-rank: contradicts "
            "--pipeline-model-parallel-layout"},
           {"--use-torch-fsdp2 --pipeline-model-parallel-size 2",
            "--use-torch-fsdp2: with --pipeline-model-parallel-size 2"},
           {"--use-torch-fsdp2 --use-distributed-optimizer",
            "--use-torch-fsdp2: with --use-distributed-optimizer"},
           {"--use-torch-fsdp2 --num-experts 8 --expert-model-parallel-size 2",
            "--use-torch-fsdp2: with --expert-model-parallel-size 2"},
           // Found by a bug hunt (2026-11-30, session 11): the export's FSDP2 flags, which
           // Megatron-LM refuses, imported.
           {"--use-torch-fsdp2", "--use-torch-fsdp2: without --untie-embeddings-and-output"},
           {"--use-torch-fsdp2 --untie-embeddings-and-output-weights",
            "--use-torch-fsdp2: without --no-gradient-accumulation-fusion"},
           {"--use-torch-fsdp2 --untie-embeddings-and-output-weights "
            "--no-gradient-accumulation-fusion --overlap-grad-reduce --overlap-param-gather",
            "--overlap-param-gather: without --use-distributed-optimizer or --use-megatron-fsdp"},
           // Megatron-Core's limits on the experts' all-to-all overlap (the export had
           // written it under DualPipe's pp 2 and beside full recompute).
           {"--num-experts 8 --expert-model-parallel-size 2 --pipeline-model-parallel-size 2 "
            "--overlap-moe-expert-parallel-comm",
            "--overlap-moe-expert-parallel-comm: with --pipeline-model-parallel-size > 1 and "
            "no virtual stages"},
           {"--num-experts 8 --expert-model-parallel-size 2 --overlap-moe-expert-parallel-comm "
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
            "--overlap-moe-expert-parallel-comm: with --recompute-method"},
           {"--num-experts 8 --expert-model-parallel-size 2 --overlap-moe-expert-parallel-comm "
            "--recompute-granularity full",
            "--overlap-moe-expert-parallel-comm: with --recompute-granularity full"},
           {"--pipeline-model-parallel-size 8",
            "--pipeline-model-parallel-size: 4 layers do not split evenly over 8 stages"},
           {"--tensor-model-parallel-size 2 --tp-comm-overlap",
            "--tp-comm-overlap: needs --sequence-parallel"},
           {"--sequence-parallel --tp-comm-overlap",
            "--tp-comm-overlap: with --tensor-model-parallel-size 1"},
           // Megatron-LM's validate_args refuses these (found over its own configs in session
           // 11; they had imported): a sequence above the position table, one CP cannot split
           // into 2 x cp chunks, the parameter gather's overlap without the gradients'.
           {"--seq-length 4096", "--max-position-embeddings: 2048 is below --seq-length 4096"},
           {"--context-parallel-size 2 --seq-length 2046",
            "--seq-length: 2046 is not a multiple of 2 x --context-parallel-size 2"},
           {"--use-distributed-optimizer --overlap-param-gather",
            "--overlap-param-gather: without --overlap-grad-reduce"},
       }) {
    CAPTURE(b.args);
    auto s = Import(kBase + b.args);
    REQUIRE(!s.ok());
    CAPTURE(s.status().message());
    CHECK(s.status().message().find("args.txt:1:") == 0);
    CHECK(s.status().message().find(b.message) != std::string::npos);
  }
  std::string no_table = kBase;
  no_table.erase(no_table.find("--max-position-embeddings"), 31);
  auto unsized = Import(no_table);
  REQUIRE(!unsized.ok());
  CHECK(unsized.status().message().find("--seq-length: 2048 with no --max-position-embeddings") !=
        std::string::npos);
  // Read from the checkpoint with --use-checkpoint-args; a variable the script never sets is
  // not compared under rotary positions (a review: both had been refused).
  CHECK(Import(no_table + "--use-checkpoint-args --load /ckpt").ok());
  CHECK(Import(no_table + "--position-embedding-type rope --max-position-embeddings '$MAX_POS'")
            .ok());
  // dist_muon is Muon over Megatron-LM's layer-wise distributed optimizer: states sharded.
  auto muon = Import(kBase + "--optimizer dist_muon");
  REQUIRE(muon.ok());
  CHECK(muon->scenario.layout.zero == 1);
  // What Megatron-LM accepts: one virtual stage at pp 1, FSDP2 alone.
  CHECK(Import(kBase + "--num-virtual-stages-per-pipeline-rank 1").ok());
  CHECK(Import(kBase + "--num-layers-per-virtual-pipeline-stage 4").ok());
  CHECK(Import(kBase + "--use-torch-fsdp2 --untie-embeddings-and-output-weights "
                       "--no-gradient-accumulation-fusion --overlap-grad-reduce")
            .ok());
  CHECK(
      Import(kBase + "--tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap").ok());
}

TEST_CASE("a layout's commas are cosmetic; hostile nesting is an error, not a crash") {
  // Megatron-LM's own example (pipeline_parallel_layer_layout.py, parse_str_to_list).
  auto s = Import(
      "--num-layers 61 --hidden-size 1024 --num-attention-heads 16 --mtp-num-layers 1 "
      "--seq-length 2048 --micro-batch-size 1 --global-batch-size 64 --vocab-size 32000 --bf16 "
      "--max-position-embeddings 2048 --pipeline-model-parallel-size 16 "
      "--pipeline-model-parallel-layout 'Et*3|(tt|)*29,m|L'",
      {.gpu = "h100-sxm5-80gb", .nodes = 2});
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s->scenario.layout.virtual_stages == 2);
  CHECK(s->scenario.layout.stage_layers[0] == 5);  // E t t t | t t
  for (const std::string flag : {"--pipeline-model-parallel-size 2 "
                                 "--pipeline-model-parallel-layout '",
                                 "--num-experts 4 --moe-layer-freq '"}) {
    const std::string deep =
        std::string(20000, '(') + (flag[2] == 'p' ? "t" : "[1]") + std::string(20000, ')') + "'";
    auto d = Import(kBase + flag + deep);
    REQUIRE(!d.ok());
    CHECK(d.status().message().find("nested deeper than 64 levels") != std::string::npos);
    CHECK(d.status().message().size() < 300);
  }
}

TEST_CASE("the precision-aware optimizer: bf16 moments and the master's remainder, or nothing") {
  auto listed = [](const ImportedScenario& s, const std::string& flag) {
    for (const UnappliedFlag& f : s.not_modelled) {
      if (f.flag == flag) return true;
    }
    return false;
  };
  // Megatron-Core passes the moments' types to the optimizer only under the flag, and without it
  // refuses any but fp32 (OptimizerConfig's asserts); an fp32 one changes nothing.
  for (const std::string bad : {"--exp-avg-dtype bf16", "--exp-avg-sq-dtype bf16",
                                "--main-params-dtype fp16", "--main-grads-dtype bf16"}) {
    CAPTURE(bad);
    auto plain = Import(kBase + bad);
    REQUIRE_FALSE(plain.ok());
    CHECK(plain.status().message().find(
              "can only be fp32 without --use-precision-aware-optimizer") != std::string::npos);
  }
  auto plain = Import(kBase + "--exp-avg-dtype fp32");
  REQUIRE_MESSAGE(plain.ok(), plain.status().message());
  CHECK(plain->scenario.training.moments == Dtype::kFp32);
  CHECK(plain->scenario.training.master_weights == MasterWeights::kFp32);
  CHECK(listed(*plain, "--exp-avg-dtype"));
  auto sgd =
      Import(kBase + "--use-distributed-optimizer --use-precision-aware-optimizer --optimizer sgd");
  REQUIRE_FALSE(sgd.ok());
  CHECK(sgd.status().message().find("supports Adam only") != std::string::npos);
  auto local = Import(kBase + "--use-precision-aware-optimizer");
  REQUIRE_FALSE(local.ok());
  CHECK(local.status().message().find("with the distributed optimizer only") != std::string::npos);
  // Under it with --bf16: bf16 moments, and the fp32 master kept as its low 16 bits.
  auto aware = Import(kBase +
                      "--use-distributed-optimizer --use-precision-aware-optimizer "
                      "--exp-avg-dtype bf16 "
                      "--exp-avg-sq-dtype bf16");
  REQUIRE_MESSAGE(aware.ok(), aware.status().message());
  CHECK(aware->scenario.training.moments == Dtype::kBf16);
  CHECK(aware->scenario.training.master_weights == MasterWeights::kRemainder);
  CHECK(Line(*aware, "master_weights: remainder"));
  CHECK_FALSE(listed(*aware, "--use-precision-aware-optimizer"));
  // Current-scaling FP8: Megatron-Core keeps its own fp32 master; delayed scaling does not.
  auto fp8 = Import(kBase +
                    "--use-distributed-optimizer --use-precision-aware-optimizer "
                    "--fp8-format hybrid --fp8-recipe tensorwise");
  REQUIRE_MESSAGE(fp8.ok(), fp8.status().message());
  CHECK(fp8->scenario.training.master_weights == MasterWeights::kFp32);
  auto delayed = Import(
      kBase + "--use-distributed-optimizer --use-precision-aware-optimizer --fp8-format hybrid");
  REQUIRE_MESSAGE(delayed.ok(), delayed.status().message());
  CHECK(delayed->scenario.training.master_weights == MasterWeights::kRemainder);
  // The recipe decides even without --fp8-format (OptimizerConfig takes it either way).
  auto recipe_only =
      Import(kBase +
             "--use-distributed-optimizer --use-precision-aware-optimizer --fp8-recipe tensorwise");
  REQUIRE_MESSAGE(recipe_only.ok(), recipe_only.status().message());
  CHECK(recipe_only->scenario.training.master_weights == MasterWeights::kFp32);
  // FP8 weights: gathered as FP8 beside the distributed optimizer, with no bf16 weights for a
  // remainder to sit beside; off under FSDP2; refused without a sharded optimizer; nothing
  // without FP8 GEMMs.
  auto fp8_weights = Import(kBase +
                            "--use-distributed-optimizer --use-precision-aware-optimizer "
                            "--fp8-format hybrid --fp8-param-gather");
  REQUIRE_MESSAGE(fp8_weights.ok(), fp8_weights.status().message());
  CHECK(fp8_weights->scenario.training.fp8_param_gather);
  CHECK(fp8_weights->scenario.training.master_weights == MasterWeights::kFp32);
  CHECK(Line(*fp8_weights, "fp8_param_gather: true"));
  CHECK_FALSE(listed(*fp8_weights, "--fp8-param-gather"));
  auto fsdp2 = Import(kBase +
                      "--use-torch-fsdp2 --untie-embeddings-and-output-weights "
                      "--no-gradient-accumulation-fusion --fp8-format "
                      "hybrid --fp8-param-gather");
  REQUIRE_MESSAGE(fsdp2.ok(), fsdp2.status().message());
  CHECK_FALSE(fsdp2->scenario.training.fp8_param_gather);
  CHECK(Import(kBase + "--fp8-format hybrid --fp8-param-gather")
            .status()
            .message()
            .find("--fp8-param-gather: needs --use-distributed-optimizer") != std::string::npos);
  auto no_fp8 = Import(kBase + "--use-distributed-optimizer --fp8-param-gather");
  REQUIRE_MESSAGE(no_fp8.ok(), no_fp8.status().message());
  CHECK_FALSE(no_fp8->scenario.training.fp8_param_gather);
  CHECK_FALSE(listed(*no_fp8, "--fp8-param-gather"));
  auto half = Import(
      kBase +
      "--use-distributed-optimizer --use-precision-aware-optimizer --main-params-dtype fp16");
  REQUIRE_MESSAGE(half.ok(), half.status().message());
  CHECK(half->scenario.training.master_weights == MasterWeights::kFp16);
}

TEST_CASE("--attention-dropout: stated, or Megatron-Core's 0.1; a bad value refused where it is") {
  auto d = Import(kBase);
  REQUIRE_MESSAGE(d.ok(), d.status().message());
  CHECK(d->scenario.training.attention_dropout == doctest::Approx(0.1));
  CHECK(Line(*d, "attention_dropout: 0.1"));
  CHECK(Line(*d, "Megatron-Core's default (TransformerConfig.attention_dropout)"));
  auto z = Import(kBase + "--attention-dropout 0.0");
  REQUIRE_MESSAGE(z.ok(), z.status().message());
  CHECK(z->scenario.training.attention_dropout == 0);
  CHECK(Line(*z, "# --attention-dropout 0.0"));
  for (const UnappliedFlag& f : z->not_modelled) CHECK(f.flag != "--attention-dropout");
  CHECK(std::find(z->keys.begin(), z->keys.end(), "training.attention_dropout") != z->keys.end());
  for (const char* bad : {"1.5", "-0.1", "abc"}) {
    CAPTURE(bad);
    auto s = Import(kBase + "--attention-dropout " + bad);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("args.txt:1:") == 0);
    CHECK(s.status().message().find("--attention-dropout") != std::string::npos);
  }
}

}  // namespace
}  // namespace parasim
