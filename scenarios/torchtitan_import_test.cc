#include "scenarios/torchtitan_import.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace parasim {
namespace {

const Catalogs& Cat() {
  static const Catalogs cat = *LoadCatalogs();
  return cat;
}

TEST_CASE(
    "torchtitan's Llama 3 8B config as tests/validation/regimes/torchtitan-a100-fsdp2.yaml "
    "states it") {
  const std::string path =
      std::string(std::getenv("TEST_SRCDIR")) + "/parasim/tests/fixtures/torchtitan/llama3_8b.toml";
  auto s = ImportTorchtitanFile(path, {.gpu = "a100-sxm4-80gb", .nodes = 8}, Cat());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const Scenario& sc = s->scenario;
  CHECK(sc.model.layers == 32);
  CHECK(sc.model.vocab == 128256);
  CHECK(sc.layout.dp == 64);
  CHECK(sc.layout.zero == 3);
  CHECK(sc.layout.zero3_copies);
  CHECK(sc.training.seq_len == 8192);
  CHECK(sc.training.global_batch == 64);
  CHECK(sc.training.micro_batch == 1);
  CHECK(sc.training.recompute == RecomputeKind::kSelectiveOp);
  CHECK(sc.training.precision == Dtype::kBf16);
  CHECK(sc.training.grad_dtype == Dtype::kFp32);
  CHECK(s->yaml.find("# [activation_checkpoint] mode = \"selective\", "
                     "[activation_checkpoint] selective_ac_option = \"op\"") != std::string::npos);
  CHECK(s->yaml.find("job.dump_folder") != std::string::npos);  // not read: listed
}

TEST_CASE("selective layer checkpointing, TP, PP and FP8; errors located") {
  const std::string toml = R"([model]
name = "llama3"
flavor = "70B"
converters = ["float8"]
[training]
local_batch_size = 4
seq_len = 4096
[parallelism]
tensor_parallel_degree = 8
pipeline_parallel_degree = 2
pipeline_parallel_schedule = "Interleaved1F1B"
[activation_checkpoint]
mode = "selective"
selective_ac_option = "2"
)";
  auto s = ImportTorchtitan("c.toml", toml, {.gpu = "h100-sxm5-80gb", .nodes = 4}, Cat());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const Scenario& sc = s->scenario;
  CHECK(sc.layout.tp == 8);
  CHECK(sc.layout.pp == 2);
  CHECK(sc.layout.dp == 2);
  CHECK(sc.layout.sp);
  CHECK(sc.layout.virtual_stages == 2);
  CHECK(sc.training.precision == Dtype::kFp8);
  CHECK(sc.training.recompute == RecomputeKind::kFull);
  // Every 2nd layer of each rank's chunks: 10 of a chunk's 20 (80 layers over pp 2 x v 2), half
  // the depth (it was 40 a chunk, every layer, before the chunks were counted).
  CHECK(sc.training.recompute_layers == 10);
  CHECK(sc.training.micro_batch == 1);
  CHECK(sc.training.global_batch == 8);
  auto bad =
      ImportTorchtitan("c.toml", "[training]\nseq_len = = 3\n", {.gpu = "h100-sxm5-80gb"}, Cat());
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("c.toml:2:") == 0);
  auto flavor = ImportTorchtitan("c.toml", "[model]\nname = \"llama3\"\nflavor = \"9B\"\n",
                                 {.gpu = "h100-sxm5-80gb"}, Cat());
  REQUIRE(!flavor.ok());
  CHECK(flavor.status().message().find("known: llama3 8B") != std::string::npos);
  // torchtitan reads any digits: "0" checkpoints every layer, "04" every 4th.
  {
    std::string t = toml;
    t.replace(t.find("selective_ac_option = \"2\""), 25, "selective_ac_option = \"0\"");
    auto every = ImportTorchtitan("c.toml", t, {.gpu = "h100-sxm5-80gb", .nodes = 4}, Cat());
    REQUIRE_MESSAGE(every.ok(), every.status().message());
    CHECK(every->scenario.training.recompute == RecomputeKind::kFull);
    CHECK(every->scenario.training.recompute_layers < 0);  // not limited: every layer
  }
  // A V schedule's rank builds two chunks: 80 layers over pp 2 x 2, every 2nd of a chunk's 20.
  {
    std::string t = toml;
    t.replace(t.find("\"Interleaved1F1B\""), 17, "\"ZBVZeroBubble\"");
    auto v = ImportTorchtitan("c.toml", t, {.gpu = "h100-sxm5-80gb", .nodes = 4}, Cat());
    REQUIRE_MESSAGE(v.ok(), v.status().message());
    CHECK(v->scenario.training.recompute_layers == 10);
  }
  // Values torchtitan would refuse are refused at their place, not read as a default.
  for (const auto& [text, at] : std::vector<std::pair<std::string, std::string>>{
           {"mode = \"bogus\"", "c.toml:13:8: error: [activation_checkpoint] mode = \"bogus\""},
           {"selective_ac_option = \"-3\"",
            "c.toml:14:23: error: [activation_checkpoint] "
            "selective_ac_option = \"-3\": expected \"op\""},
           {"seq_len = \"abc\"",
            "c.toml:7:11: error: [training] seq_len = \"abc\": expected an "
            "integer"}}) {
    std::string t = toml;
    const std::string key = text.substr(0, text.find(' '));
    const size_t line = t.find(key + " = ");
    t.replace(line, t.find('\n', line) - line, text);
    auto r = ImportTorchtitan("c.toml", t, {.gpu = "h100-sxm5-80gb", .nodes = 4}, Cat());
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.status().message().rfind(at, 0) == 0, r.status().message());
  }
}

TEST_CASE("a key of the wrong TOML type is an error at it, not the default") {
  // Wrong types a bug hunt wrote (2026-11-29), once replaced by defaults in silence.
  const std::string head =
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nseq_len = 8192\n";
  struct Bad {
    std::string toml, message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"mixed_precision_param = 16\n",
            "c.toml:6:25: error: [training] mixed_precision_param = 16: expected \"bfloat16\" or "
            "\"float32\""},
           {"mixed_precision_reduce = \"bf16\"\n", "expected \"bfloat16\" or \"float32\""},
           {"[parallelism]\nenable_async_tensor_parallel = \"true\"\n",
            "c.toml:7:32: error: [parallelism] enable_async_tensor_parallel = \"true\": expected "
            "true or false"},
           {"[parallelism]\npipeline_parallel_schedule = 3\n",
            "pipeline_parallel_schedule = 3: expected a quoted string"},
           {"[parallelism]\ntensor_parallel_degree = 2.0\n", "expected an integer from 1"},
       }) {
    CAPTURE(b.toml);
    auto s = ImportTorchtitan("c.toml", head + b.toml, {.gpu = "h100-sxm5-80gb"}, Cat());
    REQUIRE(!s.ok());
    CHECK(s.status().message().find(b.message) != std::string::npos);
  }
}

TEST_CASE("torchtitan's experts: ETP is TP or 1 (its default), EP out of dp_shard x cp x tp") {
  // torchtitan/distributed/parallel_dims.py: "Currently we only support ETP=TP or ETP=1", and
  // efsdp = dp_shard * cp * tp / (etp * ep) ranks. Both were accepted; an absent ETP was read as
  // TP's width where torchtitan's default is 1.
  auto toml = [](const std::string& par) {
    return "[model]\nname = \"qwen3\"\nflavor = \"30B-A3B\"\n[training]\nlocal_batch_size = "
           "1\nseq_len = 4096\n[parallelism]\n" +
           par;
  };
  const ImportOptions o = {.gpu = "h100-sxm5-80gb", .nodes = 2};
  auto plain = ImportTorchtitan(
      "c.toml", toml("tensor_parallel_degree = 2\nexpert_parallel_degree = 8\n"), o, Cat());
  REQUIRE_MESSAGE(plain.ok(), plain.status().message());
  CHECK(plain->scenario.layout.ep == 8);
  CHECK(plain->scenario.layout.etp == 1);
  auto etp = ImportTorchtitan("c.toml",
                              toml("tensor_parallel_degree = 4\nexpert_parallel_degree = 4\n"
                                   "expert_tensor_parallel_degree = 2\n"),
                              o, Cat());
  REQUIRE_FALSE(etp.ok());
  CHECK(etp.status().message().find("c.toml:10:") == 0);
  CHECK(etp.status().message().find("error: expert_tensor_parallel_degree 2: torchtitan runs "
                                    "the experts' TP at tensor_parallel_degree (4) or 1") !=
        std::string::npos);
  auto carve = ImportTorchtitan("c.toml",
                                toml("tensor_parallel_degree = 2\nexpert_parallel_degree = 8\n"
                                     "data_parallel_shard_degree = 1\n"
                                     "data_parallel_replicate_degree = 8\n"),
                                o, Cat());
  REQUIRE_FALSE(carve.ok());
  CHECK(carve.status().message().find("c.toml:9:") == 0);
  CHECK(carve.status().message().find("error: expert_parallel_degree 8 x "
                                      "expert_tensor_parallel_degree 1 does not divide") !=
        std::string::npos);
}

TEST_CASE("an unknown flavor and degrees that miss the cluster are told at their keys") {
  // Both said the file alone (no line or column).
  const ImportOptions o = {.gpu = "h100-sxm5-80gb", .nodes = 1};
  auto flavor = ImportTorchtitan(
      "c.toml", "[model]\nname = \"llama3\"\nflavor = \"9B\"\n[training]\nseq_len = 4096\n", o,
      Cat());
  REQUIRE_FALSE(flavor.ok());
  CHECK(flavor.status().message().find("c.toml:3:") == 0);
  CHECK(flavor.status().message().find("is not a model the catalog holds") != std::string::npos);
  auto degrees = ImportTorchtitan("c.toml",
                                  "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\n"
                                  "seq_len = 4096\n[parallelism]\ntensor_parallel_degree = 3\n",
                                  o, Cat());
  REQUIRE_FALSE(degrees.ok());
  CHECK(degrees.status().message().find("c.toml:7:") == 0);
  CHECK(degrees.status().message().find("does not match the cluster's 8 GPUs") !=
        std::string::npos);
}

TEST_CASE("torchtitan as it runs: no pipeline at pp 1, seq_len 2048, float32 without FSDP") {
  // A bug hunt on torchtitan's own configs (2026-11-30): DeepSeek-V3 671B's shipped config (pp
  // 1 beside an interleaved schedule) was refused for its stage split; a config without seq_len
  // was refused where torchtitan takes 2048; TP without FSDP read as bf16 where torchtitan turns
  // mixed precision off (maybe_enable_amp).
  const std::string head = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\n";
  const ImportOptions one = {.gpu = "h100-sxm5-80gb", .nodes = 1};
  auto pp1 = ImportTorchtitan(
      "c.toml",
      head + "seq_len = 4096\n[parallelism]\npipeline_parallel_schedule = \"Interleaved1F1B\"\n",
      one, Cat());
  REQUIRE_MESSAGE(pp1.ok(), pp1.status().message());
  CHECK(pp1->scenario.layout.pp == 1);
  CHECK(pp1->scenario.layout.virtual_stages == 1);
  auto no_seq = ImportTorchtitan("c.toml", head + "local_batch_size = 1\n", one, Cat());
  REQUIRE_MESSAGE(no_seq.ok(), no_seq.status().message());
  CHECK(no_seq->scenario.training.seq_len == 2048);
  auto tp = ImportTorchtitan("c.toml",
                             head +
                                 "seq_len = 4096\n[parallelism]\ndata_parallel_shard_degree = "
                                 "1\ndata_parallel_replicate_degree = 1\n"
                                 "tensor_parallel_degree = 8\n",
                             one, Cat());
  REQUIRE_MESSAGE(tp.ok(), tp.status().message());
  CHECK(tp->scenario.training.precision == Dtype::kFp32);
  CHECK(tp->yaml.find("torchtitan turns mixed precision off") != std::string::npos);
  // What parasim prices otherwise is listed: a schedule per accumulation step.
  auto pp = [&](const std::string& reshard) {
    return ImportTorchtitan("c.toml",
                            head +
                                "seq_len = 4096\nlocal_batch_size = 8\nglobal_batch_size = "
                                "64\n[parallelism]\npipeline_parallel_degree = 2\n" +
                                reshard,
                            one, Cat());
  };
  auto notes = pp("fsdp_reshard_after_forward = \"never\"\n");
  REQUIRE_MESSAGE(notes.ok(), notes.status().message());
  auto listed = [](const auto& imported) {
    std::string out;
    for (const auto& n : imported.not_modelled) out += n.flag + "\n";
    return out;
  };
  CAPTURE(listed(*notes));
  CHECK(listed(*notes).find("gradient accumulation over 2 pipeline schedules") !=
        std::string::npos);
  // Under PP, torch.distributed.pipelining holds FSDP2's layers to the step's end and reduces
  // once a step, with "never" or the default; "always" frees them after each forward.
  const Layout& never = notes->scenario.layout;
  REQUIRE(never.zero == 3);
  CHECK(never.zero3_reshard == Layout::Zero3Reshard::kStep);
  CHECK(never.grad_reduce == Layout::GradReduce::kStep);
  auto by_default = pp("");
  REQUIRE_MESSAGE(by_default.ok(), by_default.status().message());
  CHECK(by_default->scenario.layout.zero3_reshard == Layout::Zero3Reshard::kStep);
  auto always = pp("fsdp_reshard_after_forward = \"always\"\n");
  REQUIRE_MESSAGE(always.ok(), always.status().message());
  CHECK(always->scenario.layout.zero3_reshard == Layout::Zero3Reshard::kForward);
  CHECK(always->scenario.layout.grad_reduce == Layout::GradReduce::kStep);
  CHECK(listed(*always).find("fsdp_reshard_after_forward always under PP") != std::string::npos);
  // Without PP, "never" holds each layer from its forward to its backward.
  auto flat = ImportTorchtitan(
      "c.toml", head + "seq_len = 4096\n[parallelism]\nfsdp_reshard_after_forward = \"never\"\n",
      one, Cat());
  REQUIRE_MESSAGE(flat.ok(), flat.status().message());
  CHECK(flat->scenario.layout.zero3_reshard == Layout::Zero3Reshard::kBackward);
  CHECK(flat->scenario.layout.grad_reduce == Layout::GradReduce::kAuto);
  // A policy torchtitan does not know is refused where it is written.
  auto bad = pp("fsdp_reshard_after_forward = \"sometimes\"\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("c.toml:10:30: error: ") == 0);
  CHECK(bad.status().message().find("expected \"default\", \"always\" or \"never\"") !=
        std::string::npos);
}

TEST_CASE("pipeline_parallel_layers_per_stage follows torchtitan's stage count") {
  // torchtitan/distributed/pipeline_parallel.py: ceil((layers + 1 + 1) / per) stages.
  auto toml = [](int per, const std::string& less) {
    return "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 8\n"
           "seq_len = 8192\n[parallelism]\npipeline_parallel_degree = 4\n"
           "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
           "pipeline_parallel_layers_per_stage = " +
           std::to_string(per) + "\n" + less;
  };
  // Stages of 4 without the embedding and output counted: 8 stages, 2 a rank.
  const std::string zero =
      "pipeline_parallel_first_stage_less_layers = 0\n"
      "pipeline_parallel_last_stage_less_layers = 0\n";
  auto four =
      ImportTorchtitan("c.toml", toml(4, zero), {.gpu = "h100-sxm5-80gb", .nodes = 1}, Cat());
  REQUIRE_MESSAGE(four.ok(), four.status().message());
  CHECK(four->scenario.layout.virtual_stages == 2);
  // 32 layers + 2 in stages of 3: 12 stages, 3 a rank, uneven; floored to
  // 2 a rank before. Of 5: 7 stages, which 4 ranks do not share; of 9: 4 stages, one a rank.
  for (int per : {3, 5, 9}) {
    CAPTURE(per);
    auto bad =
        ImportTorchtitan("c.toml", toml(per, ""), {.gpu = "h100-sxm5-80gb", .nodes = 1}, Cat());
    REQUIRE(!bad.ok());
    CHECK(bad.status().message().find("c.toml:10:") == 0);
    CHECK(bad.status().message().find("expected a count that gives a multiple of "
                                      "pipeline_parallel_degree 4") != std::string::npos);
  }
  // With the default first/last_stage_less_layers (1 and 1), 32 layers at 4 a stage make 9
  // stages; at pp 2 and 9 a stage, 4 stages of 8, 9, 8 and 7 layers, which parasim's even
  // chunks cannot hold (it had imported them as two chunks of 8 a rank).
  auto pp2 = [](int per) {
    return "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 8\n"
           "seq_len = 8192\n[parallelism]\npipeline_parallel_degree = 2\n"
           "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
           "pipeline_parallel_layers_per_stage = " +
           std::to_string(per) + "\n";
  };
  auto uneven = ImportTorchtitan("c.toml", pp2(9), {.gpu = "h100-sxm5-80gb", .nodes = 1}, Cat());
  REQUIRE(!uneven.ok());
  CHECK(uneven.status().message().find("over which the layers do not split evenly") !=
        std::string::npos);
}

TEST_CASE("every pipeline splits its layers with torchtitan's less-layer counts") {
  // torchtitan counts the embedding and the output as first/last_stage_less_layers (1 each by
  // default) for every schedule, the remainder to the first stages: Llama 3 8B over pp 4 under
  // 1F1B runs 8, 9, 8 and 7 layers (it imported as 8 each); 0 and 0 split evenly; Llama 3 70B
  // over pp 2 is 41 + 41 units, parasim's account_for [embedding, loss].
  auto import = [](const std::string& flavor, const std::string& extra) {
    const std::string toml = "[model]\nname = \"llama3\"\nflavor = \"" + flavor +
                             "\"\n[training]\nseq_len = 4096\nlocal_batch_size = 8\n"
                             "[parallelism]\npipeline_parallel_degree = " +
                             (flavor == "8B" ? "4" : "2") + "\n" + extra;
    return ImportTorchtitan("c.toml", toml, {.gpu = "h100-sxm5-80gb", .nodes = 1}, Cat());
  };
  auto uneven = import("8B", "");
  REQUIRE_MESSAGE(uneven.ok(), uneven.status().message());
  CHECK(uneven->scenario.layout.stage_layers == std::vector<int>{8, 9, 8, 7});
  auto even = import("8B",
                     "pipeline_parallel_first_stage_less_layers = 0\n"
                     "pipeline_parallel_last_stage_less_layers = 0\n");
  REQUIRE_MESSAGE(even.ok(), even.status().message());
  CHECK(even->scenario.layout.stage_layers.empty());
  CHECK_FALSE(even->scenario.layout.split_embedding);
  // A V schedule holds both ends on one rank: parasim splits its layers itself (it refuses
  // account_for there), and the import says torchtitan counts the ends.
  auto v = import("70B", "pipeline_parallel_schedule = \"ZBVZeroBubble\"\n");
  REQUIRE_MESSAGE(v.ok(), v.status().message());
  CHECK_FALSE(v->scenario.layout.split_embedding);
  CHECK(v->scenario.layout.stage_layers.empty());
  bool noted = false;
  for (const UnappliedFlag& n : v->not_modelled) {
    noted |= n.flag.find("parasim's V schedule holds both ends on one rank") != std::string::npos;
  }
  CHECK(noted);
  auto both = import("70B", "");
  REQUIRE_MESSAGE(both.ok(), both.status().message());
  CHECK(both->scenario.layout.split_embedding);
  CHECK(both->scenario.layout.split_loss);
  CHECK(both->scenario.layout.stage_layers.empty());
}

}  // namespace
}  // namespace parasim
