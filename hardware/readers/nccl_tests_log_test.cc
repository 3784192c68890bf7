#include "hardware/readers/nccl_tests_log.h"

#include <doctest/doctest.h>
#include <fmt/core.h>

#include <string>

#include "hardware/readers/test_files.h"

namespace parasim {
namespace {

using testing::Fixture;

StatusOr<NcclTestsLog> Read(const std::string& fixture, const std::string& op = "") {
  NcclLogOptions o;
  o.op = op;
  return ReadNcclTestsLog(Fixture(fixture), o);
}

TEST_CASE("program names") {
  CHECK(NcclTestsOp("all_reduce_perf_mpi") == "all_reduce");
  CHECK(NcclTestsOp("/opt/nccl-tests/build/all_gather_perf") == "all_gather");
  CHECK(NcclTestsOp("AllReduce") == "all_reduce");
  CHECK(NcclTestsOp("alltoall_perf") == "alltoall");
  CHECK(NcclTestsOp("sendrecv") == "sendrecv");
  CHECK(NcclTestsOp("osu_allreduce") == "");
}

// Before: only a name that starts with X_perf said the op, though docs/CALIBRATION.md says a name
// "with X_perf in it" does.
TEST_CASE("the op from <op>_perf anywhere in a file name") {
  CHECK(NcclTestsOp("node1_all_reduce_perf.log") == "all_reduce");
  CHECK(NcclTestsOp("logs/2026-11-29.reduce_scatter_perf_mpi.txt") == "reduce_scatter");
  CHECK(NcclTestsOp("h100-x8-allgather_perf.out") == "all_gather");
  CHECK(NcclTestsOp("run_perf_then_alltoall_perf.log") == "alltoall");
  CHECK(NcclTestsOp("node1_reduce_perf.log") == "reduce");
  CHECK(NcclTestsOp("xall_reduce_perf.log") == "");  // no separator before the op
  CHECK(NcclTestsOp("node1_perf.log") == "");
  auto log = ReadNcclTestsLog(Fixture("nccl/node1_all_reduce_perf.log"));
  REQUIRE_MESSAGE(log.ok(), log.status().message());
  CHECK(log->sections.at(0).op == "all_reduce");
  CHECK(log->sections.at(0).op_from == "the file name");
}

// Before: a table pasted with its column header alone (no "# nThread" line) was read as YAML.
TEST_CASE("an nccl-tests log is told from a measurements file, by its column header too") {
  CHECK(LooksLikeNcclTestsLog(testing::ReadAll(Fixture("nccl/all_reduce_perf-table-only.log"))));
  CHECK(LooksLikeNcclTestsLog("# nThread 1 nGpus 8 minBytes 8\n"));
  CHECK(LooksLikeNcclTestsLog(
      "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   "
      "busbw #wrong\n"));
  CHECK_FALSE(LooksLikeNcclTestsLog("gpu: h100-sxm5-80gb\nlaunch: 4.1us\n"));
  CHECK_FALSE(LooksLikeNcclTestsLog("# size and busbw of every run\ncollectives: []\n"));
  // The words in a measurements file's comment or value do not make it a log.
  CHECK_FALSE(LooksLikeNcclTestsLog(
      "# collectives copied from our nccl-tests run (nThread 1)\ngpu: h100-sxm5-80gb\n"));
  CHECK_FALSE(LooksLikeNcclTestsLog("gpu: h100-sxm5-80gb\nnote: \"nThread 1 nGpus 8\"\n"));
  CHECK(LooksLikeNcclTestsLog("> # Collective test starting: all_gather_perf\n"));
  auto table = ReadNcclTestsLog(Fixture("nccl/all_reduce_perf-table-only.log"));
  REQUIRE_MESSAGE(table.ok(), table.status().message());
  CHECK(table->sections.at(0).rows.size() == 11);
  CHECK(table->sections.at(0).threads == 0);
}

// The failures, one by one: mpirun --tag-output prefixes gave "no result rows", and the
// header of all_reduce_perf_mpi was not recognised.
TEST_CASE("all_reduce_perf_mpi under mpirun --tag-output on two H100 nodes") {
  auto log = Read("nccl/all_reduce_perf_mpi-tag-output-2node-h100.log");
  REQUIRE(log.ok());
  REQUIRE(log->sections.size() == 1);
  const NcclTestsSection& s = log->sections[0];
  CHECK(s.program == "all_reduce_perf_mpi");
  CHECK(s.op == "all_reduce");
  CHECK(s.op_from == "the header at line 2");
  CHECK(s.ranks == 16);
  CHECK(s.nodes == 2);
  CHECK(s.per_node == 8);
  CHECK(s.gpu == "NVIDIA H100 80GB HBM3");
  REQUIRE(s.rows.size() == 12);
  CHECK(s.rows[0].bytes == 1024);
  CHECK(s.rows[0].line == 27);
  CHECK(s.rows.back().bytes == 4294967296);
  CHECK(s.rows.back().out_of_place.present);
  CHECK(s.rows.back().in_place.present);
  CHECK(s.rows.back().in_place.time_us > s.rows.back().out_of_place.time_us);
  CHECK(s.avg_busbw_gbps == doctest::Approx(151.204));
  // --op agreeing with the header is fine; disagreeing is an error naming both.
  CHECK(Read("nccl/all_reduce_perf_mpi-tag-output-2node-h100.log", "all_reduce_perf").ok());
  auto clash = Read("nccl/all_reduce_perf_mpi-tag-output-2node-h100.log", "all_gather");
  REQUIRE_FALSE(clash.ok());
  CHECK(clash.status().message().find(":2:1: error: the log's header says all_reduce_perf_mpi "
                                      "(all_reduce), but the op given is all_gather") !=
        std::string::npos);
}

TEST_CASE("srun --label prefixes; the op from --op or the file name") {
  auto log = Read("nccl/srun-label-all_gather-8gpu.log", "all_gather");
  REQUIRE(log.ok());
  const NcclTestsSection& s = log->sections.at(0);
  CHECK(s.op == "all_gather");
  CHECK(s.op_from == "--op");
  CHECK(s.ranks == 8);
  CHECK(s.nodes == 1);
  CHECK(s.rows.size() == 11);
  CHECK(s.rows[0].redop == "none");
  auto by_name = Read("nccl/srun-label-all_gather-8gpu.log");  // "..._all_gather-..." is no X_perf
  REQUIRE_FALSE(by_name.ok());
  CHECK(by_name.status().message().find("cannot tell which nccl-tests program") !=
        std::string::npos);
  auto wrong = Read("nccl/srun-label-all_gather-8gpu.log", "all_reduce");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message().find("a row with redop 'none' in a run read as all_reduce") !=
        std::string::npos);
}

// The old log: all_reduce then all_gather, read as 50 all_reduce points on the wrong
// number of ranks. Now each run is a section with its own ranks, and its op must be said.
TEST_CASE("an old log of two programs, split at their headers") {
  auto one_op = Read("nccl/old-2020-two-programs.log", "all_reduce");
  REQUIRE_FALSE(one_op.ok());
  CHECK(one_op.status().message().find(
            "old-2020-two-programs.log:50:1: error: a row with redop '(no "
            "redop column)' in a run read as all_reduce (--op)") != std::string::npos);
  auto none = Read("nccl/old-2020-two-programs.log");
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("pass --op with one op per run") != std::string::npos);
  auto log = Read("nccl/old-2020-two-programs.log", "all_reduce,all_gather");
  REQUIRE(log.ok());
  REQUIRE(log->sections.size() == 2);
  CHECK(log->sections[0].op == "all_reduce");
  CHECK(log->sections[0].ranks == 8);
  CHECK(log->sections[0].nodes == 1);
  CHECK(log->sections[0].rows.size() == 8);
  CHECK(log->sections[0].rows[0].out_of_place.wrong == "0e+00");
  CHECK(log->sections[1].op == "all_gather");
  CHECK(log->sections[1].ranks == 16);
  CHECK(log->sections[1].nodes == 2);
  CHECK(log->sections[1].first_line == 27);
  CHECK(log->sections[1].rows.size() == 8);
  CHECK(log->sections[1].rows[0].redop.empty());
  CHECK(log->sections[1].gpu == "Tesla V100-SXM2-32GB");
  auto three = Read("nccl/old-2020-two-programs.log", "all_reduce,all_gather,alltoall");
  REQUIRE_FALSE(three.ok());
  CHECK(three.status().message().find("--op names 3 ops, the log holds 2 runs") !=
        std::string::npos);
}

// The markdown paste: it gave an error with no location. It reads now.
TEST_CASE("a log pasted into a markdown post") {
  auto log = Read("nccl/markdown-indented.md", "all_reduce");
  REQUIRE(log.ok());
  const NcclTestsSection& s = log->sections.at(0);
  CHECK(s.rows.size() == 8);
  CHECK(s.ranks == 8);
  CHECK(s.gpu == "NVIDIA A100-SXM4-80GB");
}

TEST_CASE("the newest layout: version line, bus ids, -G graph runs, unchecked rows") {
  auto log = Read("nccl/reduce_scatter_perf-2.19-graph.log");
  REQUIRE(log.ok());
  const NcclTestsSection& s = log->sections.at(0);
  CHECK(s.op == "reduce_scatter");
  CHECK(s.graph_launches == 1);
  CHECK(s.threads == 1);
  CHECK(s.gpus_per_thread == 8);
  CHECK(s.gpu == "NVIDIA H200");
  CHECK(s.rows.size() == 8);
  CHECK(s.rows[0].type == "bfloat16");
  CHECK(s.rows[0].out_of_place.wrong == "N/A");
}

TEST_CASE("2017's layout: nThread without '#', bytes N type op ... res") {
  auto log = Read("nccl/oldest-2017-all_reduce-4gpu.log", "all_reduce");
  REQUIRE(log.ok());
  const NcclTestsSection& s = log->sections.at(0);
  CHECK(s.ranks == 4);
  CHECK(s.rows.size() == 6);
  CHECK(s.rows[5].in_place.busbw_gbps == 11.93);
  CHECK(s.rows[5].redop == "sum");
}

TEST_CASE("failures carry file:line") {
  auto neg = Read("nccl/bad-negative-time.log", "all_reduce");
  REQUIRE_FALSE(neg.ok());
  CHECK(
      neg.status().message().find("bad-negative-time.log:17:57: error: out-of-place time -3.10 is "
                                  "negative (column header at line 14)") != std::string::npos);
  auto absurd = Read("nccl/bad-absurd-busbw.log", "all_reduce");
  REQUIRE_FALSE(absurd.ok());
  CHECK(absurd.status().message().find(
            "bad-absurd-busbw.log:17:72: error: out-of-place busbw 1e+308 is "
            "absurd") != std::string::npos);
  auto apart = Read("nccl/no-mpi-interleaved.log", "all_reduce");
  REQUIRE_FALSE(apart.ok());
  CHECK(
      apart.status().message().find("no-mpi-interleaved.log:8:1: error: rank 0 is listed twice (on "
                                    "ip-10-0-1-20 and ip-10-0-1-21)") != std::string::npos);
  CHECK(apart.status().message().find("MPI=1") != std::string::npos);
}

TEST_CASE("inline: junk lines, tagged headers of several ranks, repeated sizes, no rows") {
  const std::string header =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 1(bytes) warmup iters: 5 iters: 20\n"
      "#  Rank  0 Group  0 Pid 10 on h device  0 [0x07] NVIDIA H100 80GB HBM3\n"
      "#       size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  const std::string row = "1024 256 float sum -1 45.0 0.02 0.04 0 45.1 0.02 0.04 0\n";
  const std::string p = testing::TempFile("junk.log");
  testing::WriteText(p, header + std::string(2'000'000, 'x') + "\n" + row + "\xff\xfe garbage\n");
  NcclLogOptions o;
  o.op = "all_reduce";
  auto junk = ReadNcclTestsLog(p, o);
  REQUIRE(junk.ok());
  CHECK(junk->sections.at(0).rows.size() == 1);
  REQUIRE(junk->notes.size() == 1);
  CHECK(junk->notes[0].find(":4: a line of 2000000 bytes, not a log line; skipped") !=
        std::string::npos);

  // A size again out of its sweep's order is two runs' rows in one table; the whole sweep again
  // in its order is nccl-tests -N (--run_cycles), which prints every cycle under one header;
  // the same size twice in a row is the sweep's rounding (sizes floored to whole elements a
  // rank); a size of 0 bytes (a small -b floored to nothing) is passed over.
  const std::string row2 = "2048 512 float sum -1 46.0 0.04 0.08 0 46.1 0.04 0.08 0\n";
  const std::string row4 = "4096 1024 float sum -1 47.0 0.08 0.16 0 47.1 0.08 0.16 0\n";
  const std::string zero = "0 0 float sum -1 5.0 0.00 0.00 0 5.1 0.00 0.00 0\n";
  auto twice = ParseNcclTestsLog(header + row + row2 + row + row4, "twice.log", o);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message().find(
            "twice.log:7:1: error: size 4096 (float sum) within a repeated sweep (-N) that did "
            "not hold it") != std::string::npos);
  auto pasted = ParseNcclTestsLog(header + row + row2 + row2 + row4 + row2, "pasted.log", o);
  REQUIRE_FALSE(pasted.ok());
  CHECK(pasted.status().message().find(
            "pasted.log:8:1: error: size 2048 (float sum) again, first at line 5") !=
        std::string::npos);
  auto cycles = ParseNcclTestsLog(
      header + zero + row + row2 + row2 + zero + row + row2 + row2 + row + row2, "cycles.log", o);
  REQUIRE(cycles.ok());
  CHECK(cycles->sections.at(0).rows.size() == 8);
  // -N with -o all: each op's sweep N times, then the next op's (a review, 2026-11-30).
  const std::string prod = "1024 256 float prod -1 45.0 0.02 0.04 0 45.1 0.02 0.04 0\n";
  const std::string prod2 = "2048 512 float prod -1 46.0 0.04 0.08 0 46.1 0.04 0.08 0\n";
  auto ops = ParseNcclTestsLog(header + row + row2 + row + row2 + prod + prod2 + prod + prod2,
                               "oall.log", o);
  REQUIRE_MESSAGE(ops.ok(), ops.status().message());
  CHECK(ops->sections.at(0).rows.size() == 8);
  auto late = ParseNcclTestsLog(header + row + row2 + row + row2 + row2 + row2, "late.log", o);
  REQUIRE_FALSE(late.ok());
  CHECK(late.status().message().find("late.log:8:1: error: size 2048 (float sum) again") !=
        std::string::npos);

  auto tagged = ParseNcclTestsLog(
      "[1,0]<stdout>:# nThread 1 nGpus 1\n[1,1]<stdout>:# nThread 1 nGpus 1\n" + row, "t.log", o);
  REQUIRE_FALSE(tagged.ok());
  CHECK(tagged.status().message().find(
            "t.log:2:1: error: ranks 0 and 1 each printed their own run header") !=
        std::string::npos);

  auto empty = ParseNcclTestsLog(header, "empty.log", o);
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().message().find("empty.log:1:1: error: no result rows") != std::string::npos);

  auto bare =
      ParseNcclTestsLog("# size of the buffers: 1 KiB to 8 GiB\n" + row, "all_reduce_perf.txt", {});
  REQUIRE(bare.ok());
  CHECK(bare->sections.at(0).ranks == 0);
  CHECK(bare->sections.at(0).op == "all_reduce");

  // Two runs in a file whose name names one program: the hint says why the name is not used.
  auto two = ParseNcclTestsLog(header + row + header + row, "node1_all_reduce_perf.log", {});
  REQUIRE_FALSE(two.ok());
  CHECK(two.status().message().find("the file name's all_reduce_perf names one program, and the "
                                    "file holds 2 runs") != std::string::npos);

  // Ranks of two nodes whose hosts share one name (every container "localhost"): each device
  // index twice is two nodes of 8, not one of 16 (the fit had read a 16-GPU NVLink domain).
  std::string shared = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 1(bytes)\n";
  for (int r = 0; r < 16; ++r) {
    shared += fmt::format(
        "#  Rank {:2} Group  0 Pid {} on localhost device {} [0x{:02x}] "
        "NVIDIA H100 80GB HBM3\n",
        r, 100 + r, r % 8, 0x18 + r % 8);
  }
  shared += "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  auto pods = ParseNcclTestsLog(shared + row, "pods.log", o);
  REQUIRE_MESSAGE(pods.ok(), pods.status().message());
  CHECK(pods->sections.at(0).ranks == 16);
  CHECK(pods->sections.at(0).nodes == 2);
  CHECK(pods->sections.at(0).per_node == 8);
  REQUIRE(pods->notes.size() == 1);
  CHECK(pods->notes[0] ==
        "pods.log:1: host localhost lists one GPU for 2 ranks: read as 2 "
        "nodes sharing the name");
  // One node whose ranks each see one GPU (NCCL_TESTS_DEVICE=0): every rank "device 0", the bus
  // ids apart: one node of 8 (a review: it had read 8 nodes).
  std::string masked = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 1(bytes)\n";
  for (int r = 0; r < 8; ++r) {
    masked += fmt::format(
        "#  Rank {:2} Group  0 Pid {} on h200-03 device 0 [0x{:02x}] "
        "NVIDIA H200\n",
        r, 100 + r, 0x18 + r);
  }
  masked += "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  auto one = ParseNcclTestsLog(masked + row, "masked.log", o);
  REQUIRE_MESSAGE(one.ok(), one.status().message());
  CHECK(one->sections.at(0).nodes == 1);
  CHECK(one->sections.at(0).per_node == 8);
  CHECK(one->notes.empty());

  // A UTF-8 byte-order mark before the header is passed over (the header went unread: "no
  // nThread header"); UTF-16 is named.
  auto marked = ParseNcclTestsLog("\xEF\xBB\xBF" + header + row, "bom.log", o);
  REQUIRE_MESSAGE(marked.ok(), marked.status().message());
  CHECK(marked->sections.at(0).ranks == 1);
  CHECK(LooksLikeNcclTestsLog("\xEF\xBB\xBF" + header));
  auto wide = ParseNcclTestsLog(std::string("#\0 \0", 4), "wide.log", o);
  REQUIRE_FALSE(wide.ok());
  CHECK(wide.status().message().find("wide.log:1:1: error: the file is UTF-16LE text") == 0);

  auto unknown = ParseNcclTestsLog(row, "x.log", {.op = "allreduc"});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("--op allreduc: not an nccl-tests program") !=
        std::string::npos);
  CHECK_FALSE(ReadNcclTestsLog("/dev/zero", o).ok());
}

}  // namespace
}  // namespace parasim
