// Host issue counts: how many framework ops (each a kernel launch, or a collective's) the CPU
// issues for one op of the layer graph in each pass, as Megatron-Core with Transformer Engine
// issues them. The replay prices each at GpuSpec::host_op_time on the rank's host stream
// (strategies/topology.h, RankTopology::Issue): the GPU cannot start an op before the host has
// issued it, and where the GPU's work is small the step is the host's.
//
//   const HostOps h = CountHostOps(op, training);
//   // h.fwd, h.bwd (the weight gradient's h.wgrad included)
//
// The counts are the kernels of each op's module, read from Megatron-Core and Transformer
// Engine at NVIDIA/Megatron-LM d98e8a6 (each row of host_ops.cc names its source). What is
// counted is relative: the fitted host_op_time scales them all, so what a count must get
// right is how one configuration differs from another (an unfused attention's five kernels
// against a fused one's two; the NaN fills of deterministic mode; the separate accumulation's
// add per weight).
#pragma once

#include "models/op.h"
#include "models/training.h"

namespace parasim {

// Framework ops the host issues for one op of the graph in each pass: the forward, the
// backward (input and weight gradients), and of the backward the weight gradient's share (what
// a split schedule's W issues). Collectives are not counted here (the pricer adds one per
// collective the op carries over a group of more than one rank).
struct HostOps {
  double fwd = 0;
  double bwd = 0;
  double wgrad = 0;
};

// How the attention core is split over context-parallel ranks: `cp` of them, K and V passed
// around a ring (Transformer Engine's AttnFuncWithCPAndKVP2P) or all-gathered first.
struct HostContext {
  int cp = 1;
  bool cp_all_gather = false;
};

// Host ops per collective PyTorch issues (ProcessGroupNCCL::collective: an event recorded on
// the compute stream and waited on by the NCCL stream, the NCCL kernel, an event recorded
// after it).
inline constexpr double kHostOpsPerCollective = 3;

// The ops `op` issues under `t` (deterministic fills, unfused attention, separate gradient
// accumulation, FP8 casts, routed experts one at a time, context-parallel attention).
HostOps CountHostOps(const Op& op, const Training& t, const HostContext& where = {});

// Bytes of the tensors `op` allocates in each pass (its outputs, and in backward its input
// gradient and, with separate accumulation, its weight gradient): what PyTorch's deterministic
// mode fills with NaN before use (Training::deterministic).
struct AllocatedBytes {
  double fwd = 0;
  double bwd = 0;
};
AllocatedBytes OutputBytes(const Op& op, const Training& t);

}  // namespace parasim
