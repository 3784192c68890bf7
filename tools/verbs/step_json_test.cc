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

}  // namespace
}  // namespace parasim
