// Memory per GPU, per pipeline stage: parameters, gradients, optimizer states (with master
// weights), activations of the micro-batches in flight, the working memory of the op running
// at the peak, buffers and library workspaces, and the reserve outside PyTorch's allocator.
//
//   MemoryReport r = EstimateMemory(model, training, layout, cluster);
//   r.stages[0].total(), r.stages[0].allocated(), r.fits
//
// States follow the mixed-precision rule (bf16 weights 2 + grads 2 + fp32 master 4 + Adam 8 = 16
// bytes/param; 18 with fp32 gradients as Megatron keeps them), sharded by TP, PP stage, EP and
// ZeRO stage 1/2/3. Activations come from the layer graph's saved tensors, the working memory
// from its ops' transients (models/op_graph.h), the workspaces from strategies/workspaces.h.
// `allocated()` is what torch.cuda.max_memory_allocated counts; `total()` adds the reserve
// (CUDA context, NCCL) and is what must fit on the GPU.
#pragma once

#include <vector>

#include "hardware/spec.h"
#include "models/model_spec.h"
#include "models/op.h"
#include "models/training.h"
#include "strategies/layout.h"

namespace parasim {

struct StageMemory {
  int layers = 0;
  double params = 0;        // parameters held by this GPU (count)
  double params_bytes = 0;  // weights (frozen base included)
  double grads_bytes = 0;
  double optimizer_bytes = 0;    // optimizer states and fp32 master weights
  double activations_bytes = 0;  // of the micro-batches in flight at the peak
  // Working memory beside them at the peak, freed when its op ends: the loss's copies of the
  // logits on the LM head's stage, or recompute's rebuild of one layer in backward.
  double transient_bytes = 0;
  double other_bytes = 0;    // communication buffers and library workspaces (allocated)
  double reserve_bytes = 0;  // outside PyTorch's allocator: kFrameworkReserveBytes
  double in_flight = 0;      // micro-batches whose activations are held at the peak
  // What the stage holds all step, from its start: states, buffers and the reserve.
  double held_bytes() const {
    return params_bytes + grads_bytes + optimizer_bytes + other_bytes + reserve_bytes;
  }
  double total() const { return held_bytes() + activations_bytes + transient_bytes; }
  // Through PyTorch's caching allocator (torch.cuda.max_memory_allocated): all but the reserve.
  double allocated() const { return total() - reserve_bytes; }
};

struct MemoryReport {
  std::vector<StageMemory> stages;
  double capacity_bytes = 0;
  bool fits = true;
  double bytes_per_param = 0;  // model states per parameter before sharding
};

// Bytes of model state per trainable parameter: weights, gradients, optimizer states with the
// fp32 master copy in mixed precision.
struct StateBytes {
  double weights = 2;
  double grads = 2;
  double optimizer = 12;
};
StateBytes StateBytesPerParam(const Training& t);
// Bytes a parameter of an FP8 GEMM's weight takes in Transformer Engine's FP8 form on `gpu`
// (models/op_graph.h, Fp8WeightCopyBytes): what its cache adds beside the bf16 weight, or what
// the weight takes under training.fp8_param_gather; 0 when the training runs no Transformer
// Engine FP8 GEMMs.
double Fp8WeightCopyBytesOf(const Training& t, const GpuSpec& gpu);

// The layer-graph shape of one rank's shard of a micro-batch under a layout.
GraphShape RankShape(const Training& t, const Layout& l);

// Framework reserve per GPU, outside PyTorch's allocator (torch.cuda.max_memory_allocated does
// not count it): the CUDA context, NCCL's buffers, blocks the allocator caches unallocated.
// PyTorch's CUDA context alone takes 0.3-0.8 GiB depending on the CUDA version (estimate).
inline constexpr double kFrameworkReserveBytes = 1073741824.0;  // 1 GiB

MemoryReport EstimateMemory(const ModelSpec& model, const Training& training, const Layout& layout,
                            const ClusterSpec& cluster);

// The planner's per-stage estimate holds where the schedule's order is plain (GPipe, 1F1B,
// interleaved: equal to the replay's to the byte); a split backward's deferred weight gradients
// hold what it bounds only roughly (a Llama 3 70B stage under zb-h2 with full recompute: 26.3
// GiB planned, 39.8 GiB replayed). The replay decides what `run` and `sweep` say fit, so `memory`
// and the report set each stage's activations to what the replay's peak (`peak_bytes`, one per
// stage, StepReport::peak_memory_bytes) leaves beside the states and buffers, and the
// micro-batches in flight in proportion. Returns the stages changed; none where the counts
// differ.
int AdoptReplayPeaks(const std::vector<double>& peak_bytes, MemoryReport* r);

}  // namespace parasim
