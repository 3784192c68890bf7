// One replica's scheduler, as vLLM's and TensorRT-LLM's run it: continuous batching (Orca,
// OSDI'22) under a token budget and a cap on sequences per iteration, prompts chunked to fill
// the budget beside the decodes (Sarathi-Serve, OSDI'24) or admitted whole, and a paged KV cache
// (vLLM, SOSP'23) of fixed-size blocks, allocated as a sequence grows and freed when it ends;
// when the cache is full the newest running sequence is preempted and recomputed later (vLLM's
// default), or, without preemption, a sequence is admitted only with blocks for its whole output
// reserved (TensorRT-LLM's GUARANTEED_NO_EVICT). No clock here: the replay
// (strategies/serving_replay.h) asks for a batch, prices it and reports it done.
//
//   ReplicaScheduler r(policy, kv_tokens, /*groups=*/1, ReplicaRole::kUnified);
//   r.Enqueue(id, seq);                       // an arrival, or a prompt whose KV came over
//   Batch b = r.Form(/*group=*/0);            // the next iteration, its shape
//   std::vector<Finished> done = r.Complete(0, b, t);
//
// A replica with pp pipeline stages runs pp groups of sequences, one iteration of each in
// flight (vLLM's virtual engines): each group forms its own batches from the one waiting queue.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "strategies/serving_cost.h"
#include "strategies/serving_spec.h"

namespace parasim {

enum class ReplicaRole : uint8_t { kUnified, kPrefill, kDecode };

// A request as the scheduler tracks it.
struct Sequence {
  int64_t input = 0, output = 0;
  int64_t cached = 0;     // prompt tokens a prefix cache holds (never computed)
  int64_t prompt = 0;     // tokens to prefill: the uncached prompt, and after a preemption
                          // what was generated before it
  int64_t prefilled = 0;  // of those, computed
  int64_t generated = 0;  // output tokens so far (the first comes from the prefill)
  int64_t kv = 0;         // tokens whose K and V the cache holds
  int64_t blocks = 0;     // KV blocks held
  int32_t group = -1;     // the group running it; -1 waiting
  int32_t rank = -1;      // the data-parallel attention rank holding its KV; -1 none yet
  int32_t preemptions = 0;
  bool ready = false;  // prompt done elsewhere (disaggregated decode): admitted straight to decode
  bool prompt_done() const { return prefilled >= prompt; }
};

// One iteration: what each of its sequences computes, and the shape that prices it.
struct Batch {
  struct Chunk {
    uint32_t id;
    int64_t tokens;  // prompt tokens computed; 0 for a decode
  };
  std::vector<Chunk> items;
  IterationShape shape;
  bool empty() const { return items.empty(); }
};

// What a completed iteration did to a sequence that leaves the group.
struct Finished {
  enum class Kind : uint8_t { kDone, kPromptDone };  // kPromptDone: a prefill replica's
  uint32_t id;
  Kind kind;
};

class ReplicaScheduler {
 public:
  // `ranks`: data-parallel attention ranks, each with its own share of the KV cache and its
  // own sequences (1: one cache).
  ReplicaScheduler(const EnginePolicy& policy, int64_t kv_tokens, int groups, ReplicaRole role,
                   std::vector<Sequence>* seqs, int ranks = 1);
  // A request joins the waiting queue.
  void Enqueue(uint32_t id);
  // The next iteration of `group`, its sequences taken off the waiting queue as room allows;
  // empty when the group has nothing to run.
  Batch Form(int group);
  // `b` of `group` has run: its sequences advance; those that finish (or, on a prefill
  // replica, whose prompt is done) leave and give their blocks back.
  std::vector<Finished> Complete(int group, const Batch& b);
  // A prompt handed to the decode pool: its blocks given back once its KV has gone.
  void Release(uint32_t id);

  int64_t load() const { return load_; }  // sequences waiting or running here
  int64_t used_blocks() const { return total_blocks_ - free_blocks_; }
  int64_t total_blocks() const { return total_blocks_; }
  // The fullest rank's blocks in use over its own (the replica's share with one rank).
  double fullest_share() const;
  int64_t preemptions() const { return preemptions_; }
  bool busy(int group) const { return busy_[static_cast<size_t>(group)]; }
  void set_busy(int group, bool b) { busy_[static_cast<size_t>(group)] = b; }
  bool has_waiting() const { return !waiting_.empty(); }
  // Whether a request of this size can ever run here (its KV fits the whole cache, or with
  // data-parallel attention one rank's).
  bool Admissible(const Sequence& s) const;

 private:
  int64_t BlocksFor(int64_t tokens) const;
  bool Grow(uint32_t id, int64_t tokens);  // blocks for `tokens` KV tokens; false: none left
  void Free(uint32_t id);
  // Preempts the newest running sequence of `group` on attention rank `rank` (recomputed later:
  // back to the front of the waiting queue); the victim, or -1 when none runs there.
  int64_t PreemptNewest(int group, int rank);
  // What an iteration may still take on one rank: tokens of its budget and sequences.
  struct Room {
    int64_t tokens = 0, seqs = 0;
    bool taken = false;  // something runs there already
    void Take(int64_t t) {
      tokens -= std::max<int64_t>(1, t);
      --seqs;
      taken = true;
    }
  };
  // The rank a sequence runs on: its own, or where Grow would place it (0 with one rank).
  int RankFor(const Sequence& s) const;
  void AddRunning(int group, Batch* b, std::vector<Room>* room);
  void AddWaiting(int group, Batch* b, std::vector<Room>* room);
  void Add(Batch* b, uint32_t id, int64_t tokens);
  // The prompt tokens a sequence with `remaining` to prefill may compute in one iteration
  // before the budget: all of them, or the long-prefill cap with chunked prefill.
  int64_t Chunk(int64_t remaining) const;

  EnginePolicy policy_;
  ReplicaRole role_;
  std::vector<Sequence>& seqs_;
  int64_t total_blocks_, free_blocks_;
  int ranks_ = 1;
  int64_t rank_blocks_ = 0;         // each rank's share of total_blocks_
  std::vector<int64_t> rank_free_;  // per rank, with more than one
  std::deque<uint32_t> waiting_;
  std::vector<std::vector<uint32_t>> running_;  // per group, in order of admission
  std::vector<bool> busy_;
  int64_t load_ = 0, preemptions_ = 0;
};

}  // namespace parasim
