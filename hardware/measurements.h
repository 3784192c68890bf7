// Calibration measurements: what `parasim calibrate` (tools/calibrate) measures on a GPU, or
// what nccl-tests logs report, as input to `parasim fit`.
//
// File format (YAML; times are medians of repeated timed runs, with CUDA events):
//   # parasim measurements
//   gpu: h100-sxm5-80gb                  # catalog id of the GPU measured
//   device: "NVIDIA H100 80GB HBM3"      # as the driver names it
//   driver: "550.54.15"
//   date: "2026-11-22"
//   launch: 4.1us                         # empty-kernel launch to completion
//   gemm:                                 # cuBLASLt, one row per shape
//     - {dtype: bf16, m: 8192, n: 8192, k: 8192, time: 1.39ms, spread: 0.4%}
//   memory:                               # streaming kernels: bytes read + written
//     - {kernel: copy, bytes: 4GiB, time: 1.48ms, spread: 0.2%}   # also triad, elementwise,
//                                                                  # softmax, layernorm, and
//                                                                  # the FP8 casts of
//                                                                  # tools/gpu_check/fp8_bench.py
//   attention:                            # one attention core, forward and backward
//     - {kind: standard, batch: 32, seq: 2048, head_dim: 128, causal: false,
//        forward: 1.9ms, backward: 4.1ms, spread: 1%}
//   host_copies:                          # pinned host memory <-> GPU
//     - {direction: h2d, bytes: 256MiB, time: 5.2ms, spread: 0.3%}
//   collectives:                          # NCCL, out-of-place
//     - {op: all_reduce, fabric: nvlink4-h100, ranks: 8, per_node: 8, bytes: 1GiB, time: 5.4ms,
//        spread: 1.2%}
//   contention:                           # alone, and beside a communication stand-in on SMs
//     - {victim: gemm, m: 8192, n: 8192, k: 8192, background: spin, blocks: 16, sms: 132,
//        alone: 1.39ms, with: 1.55ms, spread: 0.5%}
//     - {victim: copy, bytes: 2GiB, background: copy, blocks: 16, sms: 132, alone: 0.7ms,
//        with: 0.8ms, rate: 900GB/s}
//   sustained:                            # GEMMs back to back: first second vs last quarter
//     - {m: 8192, n: 8192, k: 8192, seconds: 30, first: 1.37ms, last: 1.41ms}
// `spread` is (max - min) / median of the timed runs, optional everywhere. `batch` of attention is
// micro-batch x heads; its FLOPs are 4 batch seq^2 head_dim forward and twice that backward
// (halved when causal).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/readers/nccl_tests_checks.h"
#include "hardware/readers/nccl_tests_log.h"
#include "hardware/spec.h"
#include "sim/status.h"
#include "sim/units.h"

namespace parasim {

struct GemmPoint {
  Dtype dtype = Dtype::kBf16;
  int64_t m = 0, n = 0, k = 0;
  Duration time;
  double spread = 0;  // (max - min) / median of the timed runs
  std::string where;  // "file:line" of the row ("" when made in code)
};

struct MemoryPoint {
  // copy, triad, elementwise, softmax, layernorm; fp8-cast-tensorwise, fp8-amax,
  // fp8-cast-1x128, fp8-cast-128x128 (bf16 -> e4m3 casts of the FP8 recipes)
  std::string kernel;
  Bytes bytes;  // bytes read plus written
  Duration time;
  double spread = 0;
  std::string where;  // "file:line" of the row
};

struct AttentionPoint {
  std::string kind = "standard";  // standard (materialised softmax) or flash (fused)
  int64_t batch = 0;              // micro-batch x heads
  int64_t seq = 0;
  int64_t head_dim = 0;
  bool causal = false;
  Duration forward;
  Duration backward;
  double spread = 0;
  std::string where;           // "file:line" of the row
  Flops ForwardFlops() const;  // 4 b s^2 d (x 1/2 causal)
  // HBM bytes as the layer graph counts them (models/layer_graph.cc, no dropout). Standard: the
  // 2-byte scores written, read and written by softmax, read by AV (4x; backward 5x). Flash:
  // Q, K, V and O once (backward 2.5x).
  Bytes HbmBytes(bool backward) const;
};

struct HostCopyPoint {
  std::string direction;  // h2d or d2h
  Bytes bytes;
  Duration time;
  double spread = 0;
};

struct CollectivePoint {
  Collective op = Collective::kAllReduce;
  std::string fabric;  // catalog id of the fabric it crossed ("" = decided by the fit)
  int64_t ranks = 0;
  int64_t per_node = 0;
  Bytes bytes;  // the NCCL "size" of the buffer
  Duration time;
  double spread = 0;
  std::string where;      // "file:line" of the row (an nccl-tests log's, or a file's)
  bool in_place = false;  // an nccl-tests row's in-place half (else out-of-place)
  // Whether the group spans nodes, so that the inter-node fabric prices it: more ranks than
  // fit on one node (send/recv: two ranks on different nodes, or nccl-tests' ring of send/recv
  // pairs spanning nodes, whose crossing pairs bound it).
  bool CrossesNodes() const;
};

// A kernel timed alone and beside a stand-in for a communication kernel that holds `blocks` of
// the GPU's `sms` SMs (tools/calibrate: one block per SM, spinning or streaming HBM).
struct ContentionPoint {
  std::string victim;  // gemm (m, n, k; bf16) or copy (bytes read plus written)
  int64_t m = 0, n = 0, k = 0;
  Bytes bytes;
  std::string background;  // spin or copy
  int64_t blocks = 0;
  int64_t sms = 0;
  Bandwidth rate;  // HBM bytes the copying stand-in moved per second (0 when spinning)
  Duration alone;
  Duration with;
  double spread = 0;
  // with / alone.
  double Slowdown() const { return with.seconds() / alone.seconds(); }
};

// GEMMs back to back for `seconds`: the median GEMM of the first second and of the last quarter.
struct SustainedPoint {
  int64_t m = 0, n = 0, k = 0;
  double seconds = 0;
  Duration first;
  Duration last;
};

struct Measurements {
  std::string file;
  std::string gpu;  // catalog id
  std::string device;
  std::string driver;
  std::string date;
  Duration launch;  // zero when not measured
  std::vector<GemmPoint> gemm;
  std::vector<MemoryPoint> memory;
  std::vector<AttentionPoint> attention;
  std::vector<HostCopyPoint> host_copies;
  std::vector<CollectivePoint> collectives;
  std::vector<ContentionPoint> contention;
  std::vector<SustainedPoint> sustained;
  std::vector<std::string> notes;  // what reading passed over (runs of ops parasim does not price)
};

StatusOr<Measurements> ParseMeasurements(const std::string& text, const std::string& file);
std::string FormatMeasurements(const Measurements& m);
// Reads a measurements file or an nccl-tests / rccl-tests log, plain or gzipped, told apart by
// content (a log: its run header or its column header, hardware/readers/nccl_tests_log.h). A log
// is read by hardware/readers/nccl_tests_log.h (every layout, launcher prefixes, several runs in
// one file); `op` is fit --op: the op of a log that does not name its program (one per run,
// comma-separated), checked against the header of one that does; `given` is fit --ranks and
// --per-node, for logs without device lines.
StatusOr<Measurements> LoadMeasurements(const std::string& path, const std::string& op = "",
                                        const NcclRanksGiven& given = {});

// The collective points of a read nccl-tests log: every run's rows, out-of-place and in-place
// halves both, with the run's op, ranks and ranks per node, checked as
// hardware/readers/nccl_tests_checks.h says: rows whose data check failed are left out (with a
// note naming their lines), a run whose every row failed is refused; without device lines the
// rank count is cross-checked against the rows' busbw/algbw (a note when it is not nThread x
// nGpus), and refused where it or the ranks per node stay unknown. Runs of ops the cost model
// does not price (reduce, gather, scatter, alltoallv, hypercube) are passed over with a note.
StatusOr<Measurements> MeasurementsFromNcclLog(const NcclTestsLog& log,
                                               const NcclRanksGiven& given);
// The same, a run that would be refused passed over with the reason as a note.
Measurements MeasurementsFromNcclLog(const NcclTestsLog& log);

}  // namespace parasim
