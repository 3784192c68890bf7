// Layer lowering: the layer graph of this rank's shape (models/layer_graph.h) priced op by op
// (layer_pricing.h: GEMM roofline, attention, memory-bound ops, and the TP/SP, CP and EP
// collectives each op carries, timed for its whole group), the model chunks of every stage
// (embedding, layers, head; gradient buckets), and the tasks of a forward, backward or
// recompute over pieces of a chunk: one task per op (--ops) or one per unit with the exposed
// part of each collective kind.
#pragma once

#include <array>
#include <initializer_list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "models/op.h"
#include "strategies/layer_pricing.h"
#include "strategies/lowering.h"
#include "strategies/step_kernels.h"
#include "strategies/topology.h"

namespace parasim {

struct ModelGraph;  // models/layer_graph.h

class LayerLowering {
 public:
  LayerLowering(LoweringContext& ctx, RankTopology& topo) : ctx_(ctx), topo_(topo) {}

  // Builds the layer graph and prices every op of its blocks.
  void BuildTimes();
  // Splits the model into chunks per stage and virtual stage, with their gradient buckets.
  void BuildChunks();

  const Chunk& chunk(int stage, int c) const { return chunks_[stage][c]; }
  // The LM head's block time (a chunk whose last piece has it computes the loss).
  const BlockTime& head_time() const { return head_; }
  const std::vector<Chunk>& chunks(int stage) const { return chunks_[stage]; }

  // Tasks of phase `ph` over pieces [first, last) of `ch` on every replica of `stage`.
  void Emit(int stage, const Chunk& ch, int first, int last, Phase ph);
  // A unit's work cut after each of its EP all-to-alls, for an F&B pair (the two units'
  // steps alternate on the compute stream, each all-to-all running beside the other's next
  // step): the ops of a step, in execution order, and the all-to-all that ends it.
  struct OpRef {
    int piece, op;
    Phase ph;
  };
  struct FbStep {
    std::vector<OpRef> ops;
    Duration ep;  // zero for the unit's last step when no all-to-all ends it
  };
  // The steps of phases `phases` of all of `ch`, in turn (recompute before backward); `whole`
  // runs a split schedule's backward with its weight gradient.
  std::vector<FbStep> FbSteps(const Chunk& ch, std::initializer_list<Phase> phases,
                              bool whole) const;
  // The tasks of one step but its closing all-to-all (the caller puts that on RankTopology's
  // Async and makes the unit's next step wait for it).
  void EmitFbStep(int stage, const Chunk& ch, const FbStep& st, bool whole);
  // The compute that Emit puts on a stage's compute stream for phase `ph` of all of `ch`, at
  // the kernels' uncontended durations.
  Duration PhaseCompute(const Chunk& ch, Phase ph) const;
  // How long phase `ph` of all of `ch` holds a stage's compute stream as Emit lowers it: its
  // compute and the exposed parts of its TP and CP collectives, which Emit puts on that stream
  // (RankTopology::Blocking), and of its EP all-to-alls when `ep` (F&B pairs run those beside
  // the other unit instead).
  Duration PhaseSerial(const Chunk& ch, Phase ph, bool ep) const;
  // PhaseSerial of the whole backward (B with its W), as an F&B unit that takes its W along
  // runs it even when the schedule splits the backward.
  Duration WholeBackwardSerial(const Chunk& ch, bool ep) const;

 private:
  // What phase `ph` of pieces [first, last) puts on the compute stream (uncontended, and
  // weighted by each op's contention slowdown) and the exposed collectives per group kind.
  struct PhaseSum {
    Duration compute, contended;
    Duration host;  // the host's time to issue the pieces' kernels and collectives
    Duration comm[kNumGroups];
    // Their cost keys, once EmitSum has asked for them (a kept sum is emitted every
    // micro-batch); kNone before.
    mutable uint32_t compute_key = sim::kNone;
    mutable std::array<uint32_t, kNumGroups> comm_key = [] {
      std::array<uint32_t, kNumGroups> none;
      none.fill(sim::kNone);
      return none;
    }();
  };
  // Whether phase `ph` runs `op` of piece `pc` (recompute reruns only layers' ops, and only the
  // attention core when selective).
  bool Runs(const Piece& pc, const OpTime& op, Phase ph) const;
  // Kept's when it keeps the range (each micro-batch asks for the same segments of the same
  // chunks), else summed.
  PhaseSum Sum(const Chunk& ch, int first, int last, Phase ph) const;
  PhaseSum SumOnce(const Chunk& ch, int first, int last, Phase ph) const;
  // One piece's sum for phase `ph` (what Runs lets it run), memoised per block time.
  const PhaseSum& PieceSum(const Piece& pc, Phase ph) const;
  static Duration Serial(const PhaseSum& sum, bool ep);
  void EmitSum(int stage, const PhaseSum& sum, TaskCat cat);
  Piece MakePiece(const Block& b, const BlockTime& bt, bool head) const;
  // `ch`'s data-parallel buckets (Chunk::segments); it is chunk `chunk` of stage `stage`.
  void Segment(Chunk* ch, int stage, int chunk) const;
  void EmitCoarse(int stage, const Chunk& ch, int first, int last, Phase ph);
  // Sum of a segment of one of this lowering's chunks or of the whole chunk (what EmitCoarse
  // asks for every micro-batch, and the bounds per stage), kept by the chunk's id and the
  // segment instead of hashed; null for another range.
  const PhaseSum* Kept(const Chunk& ch, int first, int last, Phase ph) const;
  void EmitOps(int stage, const Chunk& ch, int first, int last, Phase ph);
  // One op's compute task and its collective (`comm`: false leaves the collective out).
  void EmitOp(int stage, const OpTime& op, Phase ph, bool split, bool comm);

  LoweringContext& ctx_;
  RankTopology& topo_;
  std::shared_ptr<const ModelGraph> graph_;
  BlockTime embedding_, head_, mtp_;
  BlockTime layers_[kLayerKinds];           // per LayerKind, of the kinds the model has
  std::vector<std::vector<Chunk>> chunks_;  // [stage][chunk]
  // Kept's: per chunk id, [(segment, or the whole chunk last) x phase], and which are filled.
  static constexpr int kPhases = 4;
  struct ChunkSums {
    std::vector<PhaseSum> sums;
    std::vector<uint8_t> have;
  };
  mutable std::vector<ChunkSums> chunk_sums_;
  struct PieceKey {
    const BlockTime* time;
    bool recompute;
    Phase ph;
    bool operator==(const PieceKey&) const = default;
  };
  struct PieceKeyHash {
    size_t operator()(const PieceKey& k) const {
      return std::hash<const void*>()(k.time) * 31 + size_t(k.recompute) * 7 + size_t(k.ph);
    }
  };
  mutable std::unordered_map<PieceKey, PhaseSum, PieceKeyHash> piece_sums_;
};

}  // namespace parasim
