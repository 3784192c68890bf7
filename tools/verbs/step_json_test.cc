#include "tools/verbs/step_json.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("a layout's JSON names the optional keys only when they are set") {
  Scenario s;
  s.layout.tp = 4;
  s.layout.dp = 2;
  s.training.micro_batch = 1;
  s.training.global_batch = 8;
  const std::string plain = LayoutJson(s).Dump(0);
  CHECK(plain.rfind(R"({"tp":4,"pp":1,"dp":2,"cp":1,"ep":1,"sp":)", 0) == 0);
  for (const char* key : {"etp", "account_for", "grad_reduce", "cp_comm", "zero3_copies",
                          "recompute_layers", "precision", "fp8_recipe"}) {
    CAPTURE(key);
    CHECK(plain.find(std::string("\"") + key + "\"") == std::string::npos);
  }
  s.layout.split_loss = true;
  s.training.precision = Dtype::kFp8;
  const std::string set = LayoutJson(s).Dump(0);
  CHECK(set.find(R"("account_for":["loss"])") != std::string::npos);
  CHECK(set.find(R"("precision":"fp8")") != std::string::npos);
}

TEST_CASE("a step's JSON: time to train only with training.tokens, the cost only when priced") {
  Scenario s;
  s.name = "a";
  StepReport r;
  r.step_time_s = 2;
  r.time_to_train_s = 100;
  r.cost = 5;
  const std::string none = RunJson(s, r).Dump(0);
  CHECK(none.rfind(R"({"scenario":"a","gpus":)", 0) == 0);
  CHECK(none.find("time_to_train_s") == std::string::npos);
  s.training.tokens = 1e9;
  const std::string tokens = RunJson(s, r).Dump(0);
  CHECK(tokens.find(R"("time_to_train_s":100)") != std::string::npos);
  CHECK(tokens.find(R"("cost":)") == std::string::npos);
  s.cluster.gpu_hour_cost = 2;
  CHECK(RunJson(s, r).Dump(0).find(R"("cost":5)") != std::string::npos);
  CHECK(RunJson(s, r).Dump(0).find("\"goodput\"") == std::string::npos);  // no goodput model
}

TEST_CASE(
    "a step's JSON: the bubble per stage, the ideal on its basis, the busiest stage's parts") {
  Scenario s;
  StepReport r;
  r.step_time_s = 10;
  r.bubble_fraction = 0.15;
  r.bubble_fraction_per_stage = {0.2, 0.1};
  r.ideal_bubble_of_work = 0.25;
  r.ideal_bubble_fraction = 0.2;
  r.busiest_stage = 1;
  r.parts_s = {8, 1, 0.5, 0, 0, 0.25, 0.25};
  const std::string j = RunJson(s, r).Dump(0);
  CHECK(j.find(R"("bubble_fraction":0.15,"bubble_fraction_per_stage":[0.2,0.1],)") !=
        std::string::npos);
  CHECK(j.find(R"("ideal_bubble_fraction":0.2,"ideal_bubble_of_work":0.25,)") != std::string::npos);
  CHECK(j.find(R"("busiest_stage":1,"busiest_stage_parts_s":{"compute":8,"bubble":1,"tp":0.5,)"
               R"("cp":0,"ep":0,"pp":0.25,"dp":0.25,"host":0})") != std::string::npos);
}

TEST_CASE("a sweep holds the layout keys its block does not list, sp among them") {
  Scenario s;
  s.layout.tp = 4;
  s.layout.sp = true;
  s.layout.zero = 1;
  s.sweep = SweepSpec{};
  SweepAxis tp;
  tp.values = {"2", "4"};
  s.sweep->axes = {{"tp", tp}};
  s.dp_auto = true;
  const std::string held = HeldKeysJson(s).Dump(0);
  CHECK(held.find(R"("sp":true)") != std::string::npos);
  CHECK(held.find(R"("zero":1)") != std::string::npos);
  CHECK(held.find(R"("tp")") == std::string::npos);  // swept
  CHECK(held.find(R"("dp")") == std::string::npos);  // derived per layout
  SweepAxis sp;
  sp.values = {"false", "true"};
  s.sweep->axes.push_back({"sp", sp});
  CHECK(HeldKeysJson(s).Dump(0).find(R"("sp")") == std::string::npos);
  s.sweep.reset();
  CHECK(HeldKeysJson(s).fields().empty());
}

}  // namespace
}  // namespace parasim
