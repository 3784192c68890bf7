#include "scenarios/parallelism_block.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "scenarios/block_testing.h"
#include "sim/yaml_reader.h"
#include "strategies/schedule.h"
#include "strategies/sweep_keys.h"

namespace parasim {
namespace {

Status Read(const std::string& text, Scenario* s) {
  return testing::ReadBlock(text, "parallelism", [&](const YamlContext& ctx, const YAML::Node& n) {
    return ParseParallelism(ctx, n, s);
  });
}

TEST_CASE("the block accepts every parallelism key of the sweep's table, and reads it by it") {
  for (std::string_view k : SweepKeysOf("parallelism")) {
    CAPTURE(k);
    CHECK(std::find(ParallelismKeys().begin(), ParallelismKeys().end(), k) !=
          ParallelismKeys().end());
  }
  Scenario s;
  REQUIRE(Read("parallelism: {tp: 8, pp: 4, dp: 2, cp: 2, ep: 4, etp: 1, sp: true, zero: 2, "
               "schedule: interleaved, virtual_stages: 3, grad_reduce: step, cp_comm: "
               "all_gather}\n",
               &s)
              .ok());
  const Layout& l = s.layout;
  CHECK(l.tp == 8);
  CHECK(l.pp == 4);
  CHECK(l.dp == 2);
  CHECK_FALSE(s.dp_auto);
  CHECK(l.cp == 2);
  CHECK(l.ep == 4);
  CHECK(l.etp == 1);
  CHECK(l.sp);
  CHECK(l.zero == 2);
  CHECK(l.schedule == kScheduleInterleaved);
  CHECK(l.virtual_stages == 3);
  CHECK(l.grad_reduce == Layout::GradReduce::kStep);
  CHECK(l.cp_comm == Layout::CpComm::kAllGather);
  // One limit per key, the table's, located at the key.
  CHECK(Read("parallelism: {virtual_stages: 1025}\n", &s).message() ==
        "x.yaml:1:31: error: parallelism.virtual_stages: expected an integer from 1 to 1024, got "
        "1025");
  CHECK(Read("parallelism: {tp: 1, schedule: 1f1b-interleaved}\n", &s)
            .message()
            .find("parallelism.schedule: '1f1b-interleaved' is not accepted; expected one of: "
                  "gpipe, 1f1b, interleaved-1f1b") != std::string::npos);
}

TEST_CASE("dp: auto, or left out, is worked out by the loader") {
  Scenario s;
  REQUIRE(Read("parallelism: {tp: 2, dp: auto}\n", &s).ok());
  CHECK(s.dp_auto);
  REQUIRE(Read("parallelism: {tp: 2}\n", &s).ok());
  CHECK(s.dp_auto);
  CHECK(Read("parallelism: {dp: lots}\n", &s)
            .message()
            .find("parallelism.dp: expected an integer from 1 to 16777216, got 'lots'") !=
        std::string::npos);
}

TEST_CASE("the keys of lists, mappings and units have their own readers") {
  Scenario s;
  REQUIRE(Read("parallelism: {pp: 4, stage_layers: [7, 8, 8, 7], overlap: {dp: false, tp: "
               "backward, ep: true}, zero3_copies: false, bucket: 40MiB, compression: topk:0.01, "
               "order: [tp, dp, cp, ep, pp]}\n",
               &s)
              .ok());
  const Layout& l = s.layout;
  CHECK(l.stage_layers == std::vector<int>{7, 8, 8, 7});
  CHECK_FALSE(l.overlap_dp);
  CHECK(l.overlap_tp == Layout::TpOverlap::kBackward);
  CHECK(l.overlap_ep);
  CHECK_FALSE(l.zero3_copies);
  CHECK(l.bucket.bytes() == 40 << 20);
  CHECK(l.compression == CompressionKind::kTopK);
  CHECK(l.compression_param == 0.01);
  CHECK(l.order[1] == RankDim::kDp);
  REQUIRE(Read("parallelism: {account_for: [loss, embedding], overlap: {tp: true}}\n", &s).ok());
  CHECK(s.layout.split_embedding);
  CHECK(s.layout.split_loss);
  CHECK(s.layout.overlap_tp == Layout::TpOverlap::kAll);
  CHECK(Read("parallelism: {account_for: [loss, loss]}\n", &s)
            .message()
            .find("expected a list of what the pipeline split counts as a layer") !=
        std::string::npos);
  CHECK(Read("parallelism: {bucket: 512B}\n", &s).message().find("at least 1KiB") !=
        std::string::npos);
  CHECK(Read("parallelism: {order: [tp, cp, ep, dp]}\n", &s).message().find("a permutation") !=
        std::string::npos);
}

TEST_CASE("compressions") {
  Layout l;
  REQUIRE(ParseCompression("powersgd:4", &l).ok());
  CHECK(l.compression == CompressionKind::kPowerSgd);
  CHECK(l.compression_param == 4);
  REQUIRE(ParseCompression("int8", &l).ok());
  CHECK(l.compression == CompressionKind::kInt8);
  for (const char* bad : {"topk:0", "topk:1.5", "powersgd:0", "powersgd:2.5", "zip"}) {
    CAPTURE(bad);
    CHECK(ParseCompression(bad, &l).message().find("is not a compression") != std::string::npos);
  }
}

}  // namespace
}  // namespace parasim
