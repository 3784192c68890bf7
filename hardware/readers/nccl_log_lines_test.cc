#include "hardware/readers/nccl_log_lines.h"

#include <doctest/doctest.h>

namespace parasim {
namespace {

TEST_CASE("launcher prefixes and markdown are stripped; the rank they name is kept") {
  struct Case {
    std::string_view raw;
    NcclLineKind kind;
    int64_t rank;
    std::string_view text;
  };
  const Case cases[] = {
      {"[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8", NcclLineKind::kRunStart, 0,
       "# nThread 1 nGpus 1 minBytes 8"},
      {"[1,12]<stderr>:node-a:4103:4190 [3] NCCL INFO x", NcclLineKind::kOther, 12,
       "node-a:4103:4190 [3] NCCL INFO x"},
      {"0: #  Rank  0 Group  0 Pid 1887 on worker-1 device  0 [0x8d] NVIDIA H100 80GB HBM3",
       NcclLineKind::kDevice, 0,
       "#  Rank  0 Group  0 Pid 1887 on worker-1 device  0 [0x8d] NVIDIA H100 80GB HBM3"},
      {" 3:         1024           256     float     sum      -1    45.01    0.02    0.02      0",
       NcclLineKind::kRow, 3,
       "1024           256     float     sum      -1    45.01    0.02    0.02      0"},
      {"[2] # Avg bus bandwidth    : 120.5", NcclLineKind::kFooter, 2,
       "# Avg bus bandwidth    : 120.5"},
      {"    # Collective test starting: all_reduce_perf_mpi", NcclLineKind::kRunStart, -1,
       "# Collective test starting: all_reduce_perf_mpi"},
      {"> \t# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\r",
       NcclLineKind::kRunStart, -1,
       "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803"},
      {"#       size         count      type   redop    root     time   algbw   busbw #wrong",
       NcclLineKind::kColumns, -1,
       "#       size         count      type   redop    root     time   algbw   busbw #wrong"},
      {"nThread 1 nGpus 4 minBytes 1024", NcclLineKind::kRunStart, -1,
       "nThread 1 nGpus 4 minBytes 1024"},
      {"# Collective test concluded: all_reduce_perf", NcclLineKind::kFooter, -1,
       "# Collective test concluded: all_reduce_perf"},
      {"#        (B)    (elements)     (us)", NcclLineKind::kComment, -1,
       "#        (B)    (elements)     (us)"},
      {"```", NcclLineKind::kOther, -1, "```"},
      {"NCCL version 2.21.5+cuda12.4", NcclLineKind::kOther, -1, "NCCL version 2.21.5+cuda12.4"},
      {"12:30:01 started", NcclLineKind::kOther, -1, "12:30:01 started"},
      // Prose around a log that begins with a number is no row (every layout's row begins
      // with two whole numbers: size and count, or bytes and N).
      {"8 H100 GPUs in one DGX node, NCCL 2.21, no SHARP:", NcclLineKind::kOther, -1,
       "8 H100 GPUs in one DGX node, NCCL 2.21, no SHARP:"},
      {"3 of 5 reruns were within 1% of this.", NcclLineKind::kOther, -1,
       "3 of 5 reruns were within 1% of this."},
  };
  for (const Case& c : cases) {
    CAPTURE(c.raw);
    const NcclLine l = ClassifyNcclLine(c.raw);
    CHECK(static_cast<int>(l.kind) == static_cast<int>(c.kind));
    CHECK(l.prefix_rank == c.rank);
    CHECK(l.text == c.text);
  }
}

TEST_CASE("device lines of every version") {
  NcclDeviceLine d;
  REQUIRE(ParseNcclDeviceLine(
      "#  Rank 10 Group  0 Pid 739788 on     h100-4 device  2 [0002:00:03] NVIDIA H100 80GB HBM3",
      &d));
  CHECK(d.rank == 10);
  CHECK(d.host == "h100-4");
  CHECK(d.device == 2);
  CHECK(d.name == "NVIDIA H100 80GB HBM3");
  REQUIRE(ParseNcclDeviceLine("#   Rank  1 Pid  93569 on ai-host device  1 [0xaf] Tesla T4", &d));
  CHECK(d.host == "ai-host");
  CHECK(d.name == "Tesla T4");
  REQUIRE(
      ParseNcclDeviceLine("#   Rank  3 on   dgx-p100 device  3 [0x0b] Tesla P100-SXM2-16GB", &d));
  CHECK(d.rank == 3);
  CHECK(d.name == "Tesla P100-SXM2-16GB");
  CHECK_FALSE(ParseNcclDeviceLine("# Rank of the matrix", &d));
}

TEST_CASE("fields") {
  CHECK(NcclFields("  a  b\tc ").size() == 3);
  CHECK(NcclFields("# size count", true) == std::vector<std::string_view>{"size", "count"});
}

}  // namespace
}  // namespace parasim
