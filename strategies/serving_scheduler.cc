#include "strategies/serving_scheduler.h"

#include <algorithm>
#include <cstddef>

namespace parasim {

ReplicaScheduler::ReplicaScheduler(const EnginePolicy& policy, int64_t kv_tokens, int groups,
                                   ReplicaRole role, std::vector<Sequence>* seqs, int ranks)
    : policy_(policy),
      role_(role),
      seqs_(*seqs),
      total_blocks_(kv_tokens / std::max<int64_t>(1, policy.block_size)),
      free_blocks_(total_blocks_),
      ranks_(std::max(1, ranks)),
      running_(static_cast<size_t>(groups)),
      busy_(static_cast<size_t>(groups), false) {
  // Data-parallel attention: each rank its own cache (the replica's tokens were its ranks'
  // together), whole blocks each.
  rank_blocks_ = kv_tokens / ranks_ / std::max<int64_t>(1, policy.block_size);
  if (ranks_ > 1) {
    total_blocks_ = free_blocks_ = rank_blocks_ * ranks_;
    rank_free_.assign(static_cast<size_t>(ranks_), rank_blocks_);
  }
}

double ReplicaScheduler::fullest_share() const {
  if (ranks_ <= 1) {
    return total_blocks_ > 0 ? static_cast<double>(total_blocks_ - free_blocks_) /
                                   static_cast<double>(total_blocks_)
                             : 0.0;
  }
  if (rank_blocks_ <= 0) return 0;
  const int64_t least = *std::min_element(rank_free_.begin(), rank_free_.end());
  return static_cast<double>(rank_blocks_ - least) / static_cast<double>(rank_blocks_);
}

int64_t ReplicaScheduler::BlocksFor(int64_t tokens) const {
  const int64_t b = std::max<int64_t>(1, policy_.block_size);
  return (tokens + b - 1) / b;
}

bool ReplicaScheduler::Admissible(const Sequence& s) const {
  // Its whole KV at the end (the prompt's and every output token's but the last) fits the cache.
  const int64_t last = role_ == ReplicaRole::kPrefill ? s.input : s.input + s.output - 1;
  return BlocksFor(std::max<int64_t>(1, last)) <= (ranks_ > 1 ? rank_blocks_ : total_blocks_);
}

void ReplicaScheduler::Enqueue(uint32_t id) {
  waiting_.push_back(id);
  ++load_;
}

bool ReplicaScheduler::Grow(uint32_t id, int64_t tokens) {
  Sequence& s = seqs_[id];
  if (tokens <= s.blocks * policy_.block_size) return true;  // room in its last block
  const int64_t need = BlocksFor(tokens) - s.blocks;
  if (need <= 0) return true;
  if (ranks_ > 1) {
    // A sequence's KV stays on one rank: a new one goes to the rank with the most room (as an
    // engine balancing its attention ranks by tokens: SGLang's data-parallel controller,
    // load_balance_method minimum_tokens).
    int rank = s.rank;
    if (rank < 0) {
      rank = static_cast<int>(std::max_element(rank_free_.begin(), rank_free_.end()) -
                              rank_free_.begin());
    }
    int64_t& room = rank_free_[static_cast<size_t>(rank)];
    if (need > room) return false;
    room -= need;
    s.rank = rank;
  } else if (need > free_blocks_) {
    return false;
  }
  free_blocks_ -= need;
  s.blocks += need;
  return true;
}

void ReplicaScheduler::Free(uint32_t id) {
  Sequence& s = seqs_[id];
  free_blocks_ += s.blocks;
  if (ranks_ > 1 && s.rank >= 0) rank_free_[static_cast<size_t>(s.rank)] += s.blocks;
  s.blocks = 0;
  s.rank = -1;
}

void ReplicaScheduler::Release(uint32_t id) { Free(id); }

int64_t ReplicaScheduler::PreemptNewest(int group, int rank) {
  std::vector<uint32_t>& run = running_[static_cast<size_t>(group)];
  // The newest on the rank that needs room: after the sequence growing (which is earlier in
  // the list), or that one itself.
  size_t at = run.size();
  while (at > 0 && ranks_ > 1 && seqs_[run[at - 1]].rank != rank) --at;
  if (at == 0) return -1;
  const uint32_t victim = run[at - 1];
  run.erase(run.begin() + static_cast<std::ptrdiff_t>(at - 1));
  Sequence& v = seqs_[victim];
  Free(victim);
  // Recompute: its prompt and what it generated are prefilled again (the cached prefix stays).
  v.prompt = v.input - v.cached + v.generated;
  v.prefilled = 0;
  v.kv = v.cached;
  v.ready = false;
  v.group = -1;
  ++v.preemptions;
  ++preemptions_;
  waiting_.push_front(victim);
  return victim;
}

int64_t ReplicaScheduler::Chunk(int64_t remaining) const {
  const int64_t cap = policy_.long_prefill_threshold;
  return policy_.chunked_prefill && cap > 0 ? std::min(remaining, cap) : remaining;
}

void ReplicaScheduler::Add(Batch* b, uint32_t id, int64_t tokens) {
  const Sequence& s = seqs_[id];
  b->items.push_back({id, tokens});
  auto add = [&](IterationShape& it) {
    if (tokens == 0) {
      ++it.decode_seqs;
      it.decode_context += static_cast<double>(s.kv + 1);
      ++it.sampled;
      return;
    }
    const double before = static_cast<double>(s.kv), c = static_cast<double>(tokens);
    it.prefill_tokens += tokens;
    it.prefill_pairs += c * (before + (c + 1) / 2);
    it.prefill_context += before;
    if (s.prefilled + tokens >= s.prompt) ++it.sampled;
  };
  add(b->shape);
  // Data-parallel attention: what each rank's own sequences ask of its attention.
  if (ranks_ > 1 && s.rank >= 0) {
    b->shape.ranks.resize(static_cast<size_t>(ranks_));
    add(b->shape.ranks[static_cast<size_t>(s.rank)]);
  }
}

int ReplicaScheduler::RankFor(const Sequence& s) const {
  if (ranks_ <= 1) return 0;
  if (s.rank >= 0) return s.rank;
  // Where Grow places a new sequence: the rank with the most room.
  return static_cast<int>(std::max_element(rank_free_.begin(), rank_free_.end()) -
                          rank_free_.begin());
}

void ReplicaScheduler::AddRunning(int group, Batch* b, std::vector<Room>* room) {
  std::vector<uint32_t>& run = running_[static_cast<size_t>(group)];
  for (size_t i = 0; i < run.size(); ++i) {
    const uint32_t id = run[i];
    const Sequence& s = seqs_[id];
    Room& r = (*room)[static_cast<size_t>(RankFor(s))];
    if (r.seqs <= 0 || r.tokens <= 0) continue;  // its rank is full; others may not be
    const int64_t tokens = s.prompt_done() ? 0 : std::min(Chunk(s.prompt - s.prefilled), r.tokens);
    const int64_t grow = s.kv + std::max<int64_t>(1, tokens);
    bool preempted_self = false;
    while (!Grow(id, grow)) {
      // The cache is full: the newest sequence gives its blocks back (this one when it is the
      // newest; with reservations nothing grows past what was reserved).
      if (!policy_.preempt) return;
      const int64_t victim = PreemptNewest(group, seqs_[id].rank);
      if (victim < 0) return;
      if (victim == id) {
        preempted_self = true;
        break;
      }
    }
    // Preempted itself: the rest may run on other ranks (with one rank, nothing else fits).
    if (preempted_self) continue;
    Add(b, id, tokens);
    r.Take(tokens);
  }
}

void ReplicaScheduler::AddWaiting(int group, Batch* b, std::vector<Room>* room) {
  std::vector<uint32_t>& run = running_[static_cast<size_t>(group)];
  while (!waiting_.empty()) {
    const uint32_t id = waiting_.front();
    Sequence& s = seqs_[id];
    Room& r = (*room)[static_cast<size_t>(RankFor(s))];
    if (r.seqs <= 0 || r.tokens <= 0) break;
    int64_t tokens = s.ready ? 0 : s.prompt - s.prefilled;
    if (policy_.chunked_prefill) tokens = std::min(Chunk(tokens), r.tokens);
    // Unchunked, a prompt runs whole: it waits for an iteration with room for it, or runs alone
    // (on its rank).
    if (tokens > r.tokens && r.taken) break;
    // Blocks for what it computes now, or reserved without preemption for its KV at the end,
    // as Admissible counts it: the prompt's and every output token's but the last, which is
    // never fed back (reserving one more had stalled a request Admissible let in, exit 1).
    const int64_t grow = policy_.preempt || role_ == ReplicaRole::kPrefill
                             ? s.kv + std::max<int64_t>(1, tokens)
                             : std::max<int64_t>(1, s.input + s.output - 1);
    if (!Grow(id, grow)) break;
    waiting_.pop_front();
    s.group = group;
    run.push_back(id);
    Add(b, id, tokens);
    r.Take(tokens);
  }
}

Batch ReplicaScheduler::Form(int group) {
  Batch b;
  // The token budget and the sequence cap, each rank its share with data-parallel attention (a
  // scheduler a rank: SGLang's server_args.py divides chunked_prefill_size by dp_size under
  // enable_dp_attention, and its max running requests are per worker, 256 / 8 = 32), else the
  // replica's.
  // Unchunked, the budget stays whole (SGLang divides its chunk size, which chunking off has
  // none of): a prompt longer than a rank's share would otherwise start only on an idle rank.
  const int64_t token_ranks = policy_.chunked_prefill ? ranks_ : 1;
  std::vector<Room> room(static_cast<size_t>(ranks_),
                         Room{std::max<int64_t>(1, policy_.max_num_tokens / token_ranks),
                              std::max<int64_t>(1, policy_.max_seqs / ranks_)});
  AddRunning(group, &b, &room);
  AddWaiting(group, &b, &room);
  return b;
}

std::vector<Finished> ReplicaScheduler::Complete(int group, const Batch& b) {
  std::vector<Finished> out;
  for (const Batch::Chunk& c : b.items) {
    Sequence& s = seqs_[c.id];
    if (s.group != group) continue;
    if (c.tokens > 0) {
      s.prefilled += c.tokens;
      s.kv += c.tokens;
      if (!s.prompt_done()) continue;
      ++s.generated;  // the prompt's last token samples the next one
      if (role_ == ReplicaRole::kPrefill) {
        out.push_back({c.id, Finished::Kind::kPromptDone});
        continue;
      }
    } else {
      ++s.kv;
      ++s.generated;
    }
    if (s.generated >= s.output) out.push_back({c.id, Finished::Kind::kDone});
  }
  if (out.empty()) return out;
  std::vector<uint32_t>& run = running_[static_cast<size_t>(group)];
  for (const Finished& f : out) {
    seqs_[f.id].group = -1;
    if (f.kind == Finished::Kind::kDone) Free(f.id);
    --load_;
  }
  run.erase(
      std::remove_if(run.begin(), run.end(), [&](uint32_t id) { return seqs_[id].group != group; }),
      run.end());
  return out;
}

}  // namespace parasim
