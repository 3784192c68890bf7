#include "hardware/readers/rank_traces.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "hardware/readers/test_files.h"

namespace parasim {
namespace {

const KernelClassTable& Table() {
  static const KernelClassTable t = *KernelClassTable::Builtin();
  return t;
}

TEST_CASE("ranks from file names") {
  CHECK(RankFromFileName("dir/rank-3.json.gz") == 3);
  CHECK(RankFromFileName("trace_rank_12.pt.trace.json") == 12);
  CHECK(RankFromFileName("RANK7.json") == 7);
  CHECK(RankFromFileName("worker0.pt.trace.json") == -1);
  CHECK(RankFromFileName("rank.json") == -1);
}

// HolisticTraceAnalysis's per-rank folders (tests/data/vision_transformer/rank-N.json.gz): one
// trace per rank, the rank in distributedInfo.
TEST_CASE("a folder of two ranks, plain and gzipped, summed rank by rank") {
  auto r = ReadRankTraces(testing::Fixture("traces/two-ranks"), Table());
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].rank == 0);
  CHECK((*r)[1].rank == 1);
  CHECK((*r)[1].world_size == 2);
  CHECK((*r)[1].file.ends_with("rank-1.json.gz"));
  CHECK((*r)[0].gpu_name == "NVIDIA H100 80GB HBM3");
  // Rank 1's GEMM ran 20 us longer; both ran an NCCL all-reduce and (old naming) all-gather.
  CHECK((*r)[0].summary.measured.Time(KernelClass::kGemm) == 100000);
  CHECK((*r)[1].summary.measured.Time(KernelClass::kGemm) == 120000);
  CHECK((*r)[1].summary.measured.comm_time_ns.at("NCCL AllReduce") == 200000);
  CHECK((*r)[1].summary.measured.comm_time_ns.at("NCCL AllGather") == 40000);
}

TEST_CASE("what a folder of ranks must not be") {
  namespace fs = std::filesystem;
  const fs::path dir = testing::TempFile("ranks");
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto empty = ReadRankTraces(dir.string(), Table());
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().message().find("no traces") != std::string::npos);
  const std::string rank0 = testing::ReadAll(testing::Fixture("traces/two-ranks/rank-0.json"));
  testing::WriteText((dir / "a.json").string(), rank0);
  testing::WriteText((dir / "b.json").string(), rank0);
  testing::WriteText((dir / "README.md").string(), "not a trace");
  auto twice = ReadRankTraces(dir.string(), Table());
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message().find("b.json:1:1: error: rank 0 again (also ") !=
        std::string::npos);
  fs::remove(dir / "b.json");
  std::string other = rank0;
  const std::string said = "\"rank\": 0, \"world_size\": 2";
  other.replace(other.find(said), said.size(), "\"rank\": 1, \"world_size\": 4");
  testing::WriteText((dir / "c.json").string(), other);
  auto worlds = ReadRankTraces(dir.string(), Table());
  REQUIRE_FALSE(worlds.ok());
  CHECK(worlds.status().message().find("world_size 4, but") != std::string::npos);
  fs::remove(dir / "c.json");
  std::string anonymous = rank0;
  anonymous.replace(anonymous.find("\"rank\": 0, "), 11, "");
  testing::WriteText((dir / "worker.json").string(), anonymous);
  auto nameless = ReadRankTraces(dir.string(), Table());
  REQUIRE_FALSE(nameless.ok());
  CHECK(nameless.status().message().find("does not say its rank") != std::string::npos);
  CHECK_FALSE(ReadRankTraces(testing::Fixture("traces/two-ranks/rank-0.json"), Table()).ok());
}

}  // namespace
}  // namespace parasim
