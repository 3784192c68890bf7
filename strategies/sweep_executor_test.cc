// Executor tests: work on 1 or 2 threads gives the same results and the first error; spread
// over two processes (here two threads standing for MPI ranks) every process ends with every
// entry's findings, as one process alone, and all stop at the same error; findings survive
// packing exactly, and torn bytes are refused.
#include "strategies/sweep_executor.h"

#include <doctest/doctest.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace parasim {
namespace {

// The ranks of a job as threads of this process: AllGather meets at a barrier.
class ThreadRanks {
 public:
  explicit ThreadRanks(int n) : slots_(n) {
    for (int r = 0; r < n; ++r) ranks_.emplace_back(this, r);
  }
  const Processes& rank(int r) const { return ranks_[r]; }

 private:
  class Rank : public Processes {
   public:
    Rank(ThreadRanks* all, int r) : all_(all), r_(r) {}
    int rank() const override { return r_; }
    int size() const override { return static_cast<int>(all_->slots_.size()); }
    StatusOr<std::vector<std::string>> AllGather(const std::string& mine) const override {
      return all_->Gather(r_, mine);
    }

   private:
    ThreadRanks* all_;
    int r_;
  };

  std::vector<std::string> Gather(int r, const std::string& mine) {
    std::unique_lock<std::mutex> lock(m_);
    const uint64_t generation = generation_;
    slots_[r] = mine;
    if (++arrived_ == slots_.size()) {
      gathered_ = slots_;
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
    return gathered_;
  }

  std::vector<Rank> ranks_;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::string> slots_, gathered_;
  size_t arrived_ = 0;
  uint64_t generation_ = 0;
};

// What evaluating entry i finds, the same wherever it runs.
Status Evaluate(size_t i, std::vector<SweepEntry>* entries) {
  SweepEntry& e = (*entries)[i];
  e.fits = i % 2 == 0;
  e.replayed = i % 3 == 0;
  double x = static_cast<double>(i);
  ForEachFigure([&](double& f) { f = x += 0.1; }, e);
  e.bound_s = 1.0 / (static_cast<double>(i) + 3);
  e.goodput = 0.9;
  e.reason = i % 2 == 0 ? "" : "needs " + std::to_string(i) + " GiB";
  return Status::Ok();
}

std::vector<SweepEntry> Listed(size_t n) {
  std::vector<SweepEntry> entries(n);
  for (size_t i = 0; i < n; ++i) entries[i].key = "layout " + std::to_string(i);
  return entries;
}

std::vector<size_t> Items(size_t n) {
  std::vector<size_t> items(n);
  for (size_t i = 0; i < n; ++i) items[i] = i;
  return items;
}

// Every field of two entries' lists is the same.
void CheckSame(const std::vector<SweepEntry>& a, const std::vector<SweepEntry>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i].key == b[i].key);
    int same = 0, fields = 0;
    ForEachFound(
        [&](const auto& x, const auto& y) {
          ++fields;
          same += x == y ? 1 : 0;
        },
        a[i], b[i]);
    CHECK(same == fields);
  }
}

TEST_CASE("the same results with 1 and 2 threads, and the first error") {
  for (int jobs : {1, 2, 8}) {
    CAPTURE(jobs);
    std::vector<SweepEntry> one = Listed(50), many = Listed(50);
    REQUIRE(ParallelFor(Items(50), 1, [&](size_t i) { return Evaluate(i, &one); }).ok());
    REQUIRE(ParallelFor(Items(50), jobs, [&](size_t i) { return Evaluate(i, &many); }).ok());
    CheckSame(one, many);
    const Status st = ParallelFor(Items(50), jobs, [](size_t i) {
      return i == 17 ? InvalidArgument("layout 17 failed") : Status::Ok();
    });
    CHECK(st.message() == "layout 17 failed");
  }
  CHECK(ParallelFor({}, 2, [](size_t) { return Internal("no items, no calls"); }).ok());
}

TEST_CASE("over two processes every process ends with every entry, as one process alone") {
  const size_t n = 23;
  std::vector<SweepEntry> alone = Listed(n);
  REQUIRE(SpreadWork(
              SweepWorkers{2, nullptr}, Items(n), &alone,
              [&](size_t i) { return Evaluate(i, &alone); }, [](size_t) {})
              .ok());
  ThreadRanks job(2);
  std::vector<std::vector<SweepEntry>> mine(2, Listed(n));
  std::vector<Status> status(2);
  std::vector<std::vector<size_t>> evaluated(2), arrived(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      std::mutex mu;
      status[r] = SpreadWork(
          SweepWorkers{2, &job.rank(r)}, Items(n), &mine[r],
          [&](size_t i) {
            std::lock_guard<std::mutex> lock(mu);
            evaluated[r].push_back(i);
            return Evaluate(i, &mine[r]);
          },
          [&](size_t i) { arrived[r].push_back(i); });
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    REQUIRE(status[r].ok());
    CheckSame(mine[r], alone);
    // Each evaluates its share (items at its rank modulo 2) and receives the other's.
    CHECK(evaluated[r].size() + arrived[r].size() == n);
    for (size_t i : evaluated[r]) CHECK(i % 2 == static_cast<size_t>(r));
    for (size_t i : arrived[r]) CHECK(i % 2 != static_cast<size_t>(r));
  }
}

TEST_CASE("over two processes all of them stop at the first error by rank") {
  ThreadRanks job(2);
  std::vector<Status> status(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      std::vector<SweepEntry> entries = Listed(8);
      status[r] = SpreadWork(
          SweepWorkers{1, &job.rank(r)}, Items(8), &entries,
          [](size_t i) { return i == 3 ? InvalidArgument("layout 3 failed") : Status::Ok(); },
          [](size_t) {});
    });
  }
  for (std::thread& t : ranks) t.join();
  CHECK(status[0].message() == "layout 3 failed");  // found on rank 1, reported by both
  CHECK(status[1].message() == "layout 3 failed");
}

TEST_CASE("rank 0's results file text and its error reach every process") {
  for (bool fails : {false, true}) {
    ThreadRanks job(2);
    std::vector<StatusOr<std::string>> got(2, Internal("not run"));
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.emplace_back([&, r] {
        const Status st =
            r == 0 && fails ? InvalidArgument("out.csv:1:1: error: cannot write") : Status::Ok();
        got[r] = ShareFromPrimary(SweepWorkers{1, &job.rank(r)}, st, r == 0 ? "rank 0's" : "");
      });
    }
    for (std::thread& t : ranks) t.join();
    for (int r = 0; r < 2; ++r) {
      CHECK(got[r].ok() == !fails);
      if (got[r].ok()) CHECK(*got[r] == "rank 0's");
    }
  }
  // One process: the text, or the error, as they are.
  CHECK(*ShareFromPrimary(SweepWorkers{}, Status::Ok(), "text") == "text");
  CHECK(!ShareFromPrimary(SweepWorkers{}, Internal("x"), "text").ok());
}

TEST_CASE("findings packed and unpacked exactly; torn bytes refused") {
  std::vector<SweepEntry> from = Listed(5), to = Listed(5);
  for (size_t i = 0; i < 5; ++i) REQUIRE(Evaluate(i, &from).ok());
  const std::string bytes = PackFound(Status::Ok(), {4, 1}, from);
  auto got = UnpackFound(bytes, &to);
  REQUIRE(got.ok());
  CHECK(*got == std::vector<size_t>{4, 1});
  CheckSame({to[4], to[1]}, {from[4], from[1]});
  CHECK(to[0].bound_s == 0);  // not packed: untouched
  CHECK(!UnpackFound(bytes.substr(0, bytes.size() - 3), &to).ok());
  std::vector<SweepEntry> few = Listed(2);
  CHECK(!UnpackFound(bytes, &few).ok());  // index 4 of 2 entries
  const auto failed = UnpackFound(PackFound(InvalidArgument("bad"), {1}, from), &to);
  CHECK(failed.status().message() == "bad");
}

}  // namespace
}  // namespace parasim
