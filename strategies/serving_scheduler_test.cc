#include "strategies/serving_scheduler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

namespace parasim {
namespace {

// Requests of 50-549 prompt tokens and 1-256 output tokens (a fixed pattern).
std::vector<Sequence> Requests(int n) {
  std::vector<Sequence> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Sequence& s = out[static_cast<size_t>(i)];
    s.input = 50 + (i * 137) % 500;
    s.output = 1 + (i * 61) % 256;
    s.prompt = s.input;
  }
  return out;
}

struct Run {
  int64_t iterations = 0, finished = 0, preemptions = 0;
  bool within_budget = true, within_cache = true, within_seqs = true;
};

// Every request queued at once, iterations run until all are done.
Run Drive(const EnginePolicy& p, int64_t kv_tokens, int n, int ranks = 1) {
  std::vector<Sequence> seqs = Requests(n);
  ReplicaScheduler r(p, kv_tokens, 1, ReplicaRole::kUnified, &seqs, ranks);
  for (uint32_t i = 0; i < seqs.size(); ++i) {
    REQUIRE(r.Admissible(seqs[i]));
    r.Enqueue(i);
  }
  Run run;
  while (run.finished < n && run.iterations < 100000) {
    const Batch b = r.Form(0);
    REQUIRE_FALSE(b.empty());
    // Each rank within its share of the budget (the whole of it unchunked) and of the
    // sequences (the replica's with one rank), or running one unchunked prompt alone.
    const int64_t share = p.chunked_prefill ? p.max_num_tokens / ranks : p.max_num_tokens;
    std::vector<int64_t> tokens(static_cast<size_t>(ranks), 0), items(tokens);
    for (const Batch::Chunk& c : b.items) {
      const size_t r = ranks > 1 ? static_cast<size_t>(seqs[c.id].rank) : 0;
      tokens[r] += std::max<int64_t>(1, c.tokens);
      ++items[r];
    }
    for (int r = 0; r < ranks; ++r) {
      const bool lone_prompt = items[static_cast<size_t>(r)] == 1 && !p.chunked_prefill;
      run.within_budget =
          run.within_budget && (tokens[static_cast<size_t>(r)] <= share || lone_prompt);
      run.within_seqs = run.within_seqs && items[static_cast<size_t>(r)] <= p.max_seqs / ranks;
    }
    run.within_cache =
        run.within_cache && r.used_blocks() <= r.total_blocks() && r.fullest_share() <= 1;
    run.finished += static_cast<int64_t>(r.Complete(0, b).size());
    ++run.iterations;
  }
  run.preemptions = r.preemptions();
  CHECK(r.used_blocks() == 0);  // every block given back
  CHECK(r.load() == 0);
  for (const Sequence& s : seqs) CHECK(s.generated == s.output);
  return run;
}

TEST_CASE("continuous batching: budget, sequences and KV held; every request finishes") {
  for (bool chunked : {true, false}) {
    for (bool preempt : {true, false}) {
      for (int64_t kv : {4000, 200000}) {
        // Data-parallel attention ranks each hold a share of the cache (4 x 1000 tokens still
        // admit every request of at most 805).
        for (int ranks : {1, 4}) {
          CAPTURE(chunked);
          CAPTURE(preempt);
          CAPTURE(kv);
          CAPTURE(ranks);
          EnginePolicy p;
          p.max_num_tokens = 1024;
          p.max_seqs = 64;
          p.chunked_prefill = chunked;
          p.preempt = preempt;
          const Run run = Drive(p, kv, 300, ranks);
          CHECK(run.finished == 300);
          CHECK(run.within_budget);
          CHECK(run.within_seqs);
          CHECK(run.within_cache);
          // A small cache preempts when sequences grow into it; reserving never does.
          if (!preempt || kv == 200000) CHECK(run.preemptions == 0);
          if (preempt && kv == 4000) CHECK(run.preemptions > 0);
        }
      }
    }
  }
}

TEST_CASE("data-parallel attention: a sequence's KV and attention stay on one rank") {
  // Four ranks of 1,000 tokens each: a request of 1,500 fits the replica's 4,000 but no rank.
  EnginePolicy p;
  p.block_size = 10;
  std::vector<Sequence> seqs(6);
  for (Sequence& s : seqs) s.input = s.prompt = 300, s.output = 10;
  seqs[5].input = seqs[5].prompt = 1500;
  ReplicaScheduler r(p, 4000, 1, ReplicaRole::kUnified, &seqs, 4);
  CHECK_FALSE(r.Admissible(seqs[5]));
  CHECK(ReplicaScheduler(p, 4000, 1, ReplicaRole::kUnified, &seqs, 1).Admissible(seqs[5]));
  for (uint32_t i = 0; i < 5; ++i) r.Enqueue(i);
  const Batch b = r.Form(0);
  REQUIRE(b.items.size() == 5);
  // Each new sequence goes to the rank with the most room: four ranks, then the fifth beside
  // the first; the iteration's shape carries each rank's own prompt tokens.
  std::vector<int> per(4, 0);
  for (uint32_t i = 0; i < 5; ++i) ++per[static_cast<size_t>(seqs[i].rank)];
  CHECK(per == std::vector<int>{2, 1, 1, 1});
  REQUIRE(b.shape.ranks.size() == 4);
  CHECK(b.shape.ranks[0].prefill_tokens == 600);
  CHECK(b.shape.ranks[3].prefill_tokens == 300);
  CHECK(b.shape.prefill_tokens == 1500);
  // The fullest rank: 2 x 30 blocks of its 100 (each prompt's KV), where the replica's blocks
  // are 150 of 400 in use.
  CHECK(r.fullest_share() == doctest::Approx(0.6));
  CHECK(static_cast<double>(r.used_blocks()) / static_cast<double>(r.total_blocks()) ==
        doctest::Approx(0.375));
  // Each rank its share of the token budget (a scheduler a rank, as SGLang divides its chunk
  // size): a 1,000-token prompt on a replica of 4 ranks and a 1,024-token budget advances 256
  // tokens an iteration on its rank, where it had taken the whole budget while the others waited.
  p.max_num_tokens = 1024;
  std::vector<Sequence> one(1);
  one[0].input = one[0].prompt = 1000;
  one[0].output = 10;
  ReplicaScheduler q(p, 4000, 1, ReplicaRole::kUnified, &one, 4);
  q.Enqueue(0);
  const Batch c = q.Form(0);
  REQUIRE(c.items.size() == 1);
  CHECK(c.items[0].tokens == 256);
  // Unchunked, each rank's budget stays whole (SGLang divides only its chunk size): a prompt
  // longer than a quarter of the budget starts beside another rank's work, where a rank's share
  // would have left it for an idle rank.
  p.chunked_prefill = false;
  std::vector<Sequence> two(2);
  for (Sequence& x : two) x.input = x.prompt = 1000, x.output = 10;
  ReplicaScheduler u(p, 8000, 1, ReplicaRole::kUnified, &two, 4);
  u.Enqueue(0);
  u.Enqueue(1);
  const Batch whole = u.Form(0);
  REQUIRE(whole.items.size() == 2);
  CHECK(whole.items[0].tokens == 1000);
  CHECK(two[0].rank != two[1].rank);
}

TEST_CASE("without preemption a request the cache just admits runs: it reserves what it holds") {
  // Its KV at the end is the prompt and every output token but the last: 161 + 16 - 1 = 176
  // tokens, 11 blocks of 16 in a cache of 11. The reservation had asked 177 (12 blocks): the
  // request Admissible let in never started, and the replay stalled (exit 1).
  EnginePolicy p;
  p.block_size = 16;
  p.preempt = false;
  std::vector<Sequence> seqs(1);
  seqs[0].input = seqs[0].prompt = 161;
  seqs[0].output = 16;
  ReplicaScheduler r(p, 11 * 16, 1, ReplicaRole::kUnified, &seqs);
  REQUIRE(r.Admissible(seqs[0]));
  r.Enqueue(0);
  int64_t iterations = 0, finished = 0;
  while (finished < 1 && iterations < 100) {
    const Batch b = r.Form(0);
    REQUIRE_FALSE(b.empty());
    CHECK(r.used_blocks() <= r.total_blocks());
    finished += static_cast<int64_t>(r.Complete(0, b).size());
    ++iterations;
  }
  CHECK(finished == 1);
  CHECK(seqs[0].generated == 16);
}

TEST_CASE("an iteration's shape: chunks, decodes, causal pairs, tokens sampled") {
  EnginePolicy p;
  p.max_num_tokens = 100;
  std::vector<Sequence> seqs(2);
  seqs[0].input = seqs[0].prompt = 150;
  seqs[0].output = 3;
  seqs[1].input = seqs[1].prompt = 30;
  seqs[1].output = 2;
  ReplicaScheduler r(p, 10000, 1, ReplicaRole::kUnified, &seqs);
  r.Enqueue(0);
  r.Enqueue(1);
  Batch b = r.Form(0);  // the first 100 tokens of request 0
  CHECK(b.shape.prefill_tokens == 100);
  CHECK(b.shape.prefill_pairs == doctest::Approx(100 * 50.5));
  CHECK(b.shape.sampled == 0);
  r.Complete(0, b);
  b = r.Form(0);  // request 0's last 50 (after 100 of context) and request 1's 30
  CHECK(b.shape.prefill_tokens == 80);
  CHECK(b.shape.prefill_context == 100);
  CHECK(b.shape.prefill_pairs == doctest::Approx(50 * (100 + 25.5) + 30 * 15.5));
  CHECK(b.shape.sampled == 2);
  r.Complete(0, b);
  CHECK(seqs[0].generated == 1);
  b = r.Form(0);  // two decodes, over 151 and 31 tokens of context
  CHECK(b.shape.decode_seqs == 2);
  CHECK(b.shape.decode_context == 151 + 31);
  CHECK(r.Complete(0, b).size() == 1);  // request 1 has its 2 tokens
}

TEST_CASE("vLLM's long-prefill threshold: each prompt advances by at most its cap a step") {
  // Three prompts of 600 tokens under a budget of 1024 and a cap of 256 (the Red Hat MLPerf
  // v5.1 vLLM Server command): the first iteration computes 256 of each (768 tokens), not 1024
  // of the first and none of the third; each needs ceil(600 / 256) = 3 iterations.
  EnginePolicy p;
  p.max_num_tokens = 1024;
  p.long_prefill_threshold = 256;
  std::vector<Sequence> seqs(3);
  for (Sequence& s : seqs) {
    s.input = s.prompt = 600;
    s.output = 2;
  }
  ReplicaScheduler r(p, 100000, 1, ReplicaRole::kUnified, &seqs);
  for (uint32_t i = 0; i < 3; ++i) r.Enqueue(i);
  Batch b = r.Form(0);
  CHECK(b.items.size() == 3);
  CHECK(b.shape.prefill_tokens == 768);
  r.Complete(0, b);
  b = r.Form(0);
  CHECK(b.shape.prefill_tokens == 768);
  r.Complete(0, b);
  b = r.Form(0);  // the last 88 of each: every prompt done, a token sampled each
  CHECK(b.shape.prefill_tokens == 3 * 88);
  CHECK(b.shape.sampled == 3);
  // Without chunked prefill the cap does not apply: a prompt enters whole.
  p.chunked_prefill = false;
  std::vector<Sequence> whole(1);
  whole[0].input = whole[0].prompt = 600;
  whole[0].output = 2;
  ReplicaScheduler w(p, 100000, 1, ReplicaRole::kUnified, &whole);
  w.Enqueue(0);
  CHECK(w.Form(0).shape.prefill_tokens == 600);
}

TEST_CASE("a prefill replica hands a prompt over once computed, and frees it when told") {
  EnginePolicy p;
  std::vector<Sequence> seqs(1);
  seqs[0].input = seqs[0].prompt = 64;
  seqs[0].output = 10;
  ReplicaScheduler r(p, 1600, 1, ReplicaRole::kPrefill, &seqs);
  r.Enqueue(0);
  const Batch b = r.Form(0);
  const std::vector<Finished> f = r.Complete(0, b);
  REQUIRE(f.size() == 1);
  CHECK(f[0].kind == Finished::Kind::kPromptDone);
  CHECK(r.used_blocks() == 4);  // 64 tokens in blocks of 16, until the KV has gone
  r.Release(0);
  CHECK(r.used_blocks() == 0);
  // A request whose KV cannot fit the whole cache is refused.
  Sequence huge;
  huge.input = 5000;
  huge.output = 1;
  CHECK_FALSE(r.Admissible(huge));
}

}  // namespace
}  // namespace parasim
