#include "tools/calibrate/collectives.h"

#include <cuda_runtime.h>
#include <fmt/core.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "tools/calibrate/median.h"
#include "tools/calibrate/timing.h"

namespace parasim::calibrate {
namespace {

// The first `g` GPUs with a communicator, a stream, and a send and a receive buffer of
// `max_bytes` each.
struct NcclGroup {
  int g = 0;
  std::vector<ncclComm_t> comms;
  std::vector<void*> send, recv;
  std::vector<cudaStream_t> streams;
  size_t max_bytes = 0;
};

// The largest buffer that fits twice (send and receive) on every GPU, up to --max-bytes.
void AllocateBuffers(const Options& o, NcclGroup* n) {
  const int g = n->g;
  n->max_bytes = o.quick ? std::min(o.max_bytes, size_t{64} << 20) : o.max_bytes;
  for (;;) {
    bool ok = true;
    for (int i = 0; i < g && ok; ++i) {
      cudaSetDevice(i);
      ok = cudaMalloc(&n->send[i], n->max_bytes) == cudaSuccess &&
           cudaMalloc(&n->recv[i], n->max_bytes) == cudaSuccess;
    }
    if (ok) break;
    cudaGetLastError();
    for (int i = 0; i < g; ++i) {
      cudaSetDevice(i);
      cudaFree(n->send[i]);
      cudaFree(n->recv[i]);
      n->send[i] = n->recv[i] = nullptr;
    }
    n->max_bytes /= 2;
    if (n->max_bytes < (size_t{1} << 20)) Fail(1, "no GPU memory left for NCCL buffers");
    fmt::print(stderr, "NCCL buffers: only {} MiB fit\n", n->max_bytes >> 20);
  }
}

void OpenGroup(const Options& o, int g, NcclGroup* n) {
  n->g = g;
  n->comms.resize(g);
  std::vector<int> devs(g);
  for (int i = 0; i < g; ++i) devs[i] = i;
  if (ncclCommInitAll(n->comms.data(), g, devs.data()) != ncclSuccess) {
    Fail(1, fmt::format("ncclCommInitAll over {} GPUs failed", g));
  }
  n->send.assign(g, nullptr);
  n->recv.assign(g, nullptr);
  n->streams.resize(g);
  AllocateBuffers(o, n);
  for (int i = 0; i < g; ++i) {
    cudaSetDevice(i);
    cudaMemset(n->send[i], 0, n->max_bytes);
    cudaStreamCreate(&n->streams[i]);
  }
}

void CloseGroup(NcclGroup* n) {
  for (int i = 0; i < n->g; ++i) {
    cudaSetDevice(i);
    cudaFree(n->send[i]);
    cudaFree(n->recv[i]);
    cudaStreamDestroy(n->streams[i]);
    ncclCommDestroy(n->comms[i]);
  }
  cudaSetDevice(0);
}

// Enqueues `op` over `bytes` (bf16 elements) on every GPU of the group, as one NCCL group.
void Enqueue(const NcclGroup& n, Collective op, size_t bytes) {
  const int g = n.g;
  const size_t count = bytes / 2;  // bf16 elements
  ncclGroupStart();
  for (int i = 0; i < g; ++i) {
    switch (op) {
      case Collective::kAllReduce:
        ncclAllReduce(n.send[i], n.recv[i], count, ncclBfloat16, ncclSum, n.comms[i], n.streams[i]);
        break;
      case Collective::kAllGather:
        ncclAllGather(n.send[i], n.recv[i], count / g, ncclBfloat16, n.comms[i], n.streams[i]);
        break;
      case Collective::kReduceScatter:
        ncclReduceScatter(n.send[i], n.recv[i], count / g, ncclBfloat16, ncclSum, n.comms[i],
                          n.streams[i]);
        break;
      case Collective::kAllToAll:
        for (int p = 0; p < g; ++p) {
          const size_t part = count / g;
          ncclSend(static_cast<char*>(n.send[i]) + p * part * 2, part, ncclBfloat16, p, n.comms[i],
                   n.streams[i]);
          ncclRecv(static_cast<char*>(n.recv[i]) + p * part * 2, part, ncclBfloat16, p, n.comms[i],
                   n.streams[i]);
        }
        break;
      case Collective::kSendRecv:
        if (i < 2) {
          ncclSend(n.send[i], count, ncclBfloat16, 1 - i, n.comms[i], n.streams[i]);
          ncclRecv(n.recv[i], count, ncclBfloat16, 1 - i, n.comms[i], n.streams[i]);
        }
        break;
      case Collective::kBroadcast:
        break;
    }
  }
  ncclGroupEnd();
}

// One row: kWarmup untimed runs, then timed ones (host clock around the group and the streams'
// synchronisation); the median with its spread.
void TimeCollective(const Options& o, const NcclGroup& n, Collective op, size_t bytes,
                    Measurements* m) {
  std::vector<double> times;
  const int runs = o.quick ? 3 : bytes >= (size_t{1} << 30) ? 5 : 20;
  for (int it = 0; it < kWarmup + runs; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    Enqueue(n, op, bytes);
    for (int i = 0; i < n.g; ++i) {
      cudaSetDevice(i);
      Check(cudaStreamSynchronize(n.streams[i]), "NCCL");
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (it >= kWarmup) times.push_back(s);
  }
  const auto [med, spread] = MedianSpread(std::move(times));
  const int64_t ranks = op == Collective::kSendRecv ? 2 : n.g;
  m->collectives.push_back(
      {op, "", ranks, ranks, Bytes(static_cast<double>(bytes)), Duration::Seconds(med), spread});
}

// NCCL collectives on the first `g` GPUs (one communicator each, one process).
void CollectivesOn(const Options& o, int g, Measurements* m) {
  NcclGroup n;
  OpenGroup(o, g, &n);
  std::vector<Collective> ops = {Collective::kAllReduce, Collective::kAllGather,
                                 Collective::kReduceScatter, Collective::kAllToAll};
  if (g == 2) ops.push_back(Collective::kSendRecv);  // one pair is one case
  for (Collective op : ops) {
    for (size_t bytes = 1024; bytes <= n.max_bytes; bytes *= 4) TimeCollective(o, n, op, bytes, m);
  }
  CloseGroup(&n);
}

}  // namespace

// Groups of 2, 4, 8, ... GPUs and all of them: the cost model prices each group size on its own
// when the profile has it (hardware/spec.h, FabricSpec::collectives).
void MeasureCollectives(const Options& o, int gpus, Measurements* m) {
  if (gpus < 2) {
    fmt::print(stderr, "NCCL skipped: one visible GPU\n");
    return;
  }
  std::vector<int> sizes;
  for (int g = 2; g < gpus; g *= 2) sizes.push_back(g);
  sizes.push_back(gpus);
  for (int g : sizes) {
    fmt::print(stderr, "NCCL on {} GPUs\n", g);
    CollectivesOn(o, g, m);
  }
}

}  // namespace parasim::calibrate
