#include "strategies/sweep_executor.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

namespace parasim {

Status ParallelFor(const std::vector<size_t>& items, int jobs,
                   const std::function<Status(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  auto work = [&]() {
    for (size_t k = next++; k < items.size(); k = next++) {
      if (Status st = fn(items[k]); !st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = st;
      }
    }
  };
  std::vector<std::thread> pool;
  const size_t threads = std::min<size_t>(std::max(1, jobs), items.size());
  for (size_t j = 1; j < threads; ++j) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  return first_error;
}

namespace {

// Values as bytes for Processes::AllGather, in this machine's representation (every process
// of a job runs the same binary).
class Packer {
 public:
  void Put(uint64_t v) { Raw(&v, sizeof v); }
  void Put(double v) { Raw(&v, sizeof v); }
  void Put(bool v) { Put(static_cast<uint64_t>(v ? 1 : 0)); }
  void Put(const std::string& v) {
    Put(static_cast<uint64_t>(v.size()));
    bytes_ += v;
  }
  void Put(const Status& st) {
    Put(static_cast<uint64_t>(st.code()));
    Put(st.message());
  }
  std::string& bytes() { return bytes_; }

 private:
  void Raw(const void* p, size_t n) { bytes_.append(static_cast<const char*>(p), n); }
  std::string bytes_;
};

class Unpacker {
 public:
  explicit Unpacker(const std::string& b) : b_(b) {}
  bool done() const { return at_ >= b_.size(); }
  bool ok() const { return ok_; }
  void Get(uint64_t* v) { *v = Raw<uint64_t>(); }
  void Get(double* v) { *v = Raw<double>(); }
  void Get(bool* v) { *v = Raw<uint64_t>() != 0; }
  void Get(std::string* v) {
    const uint64_t n = Raw<uint64_t>();
    if (!ok_ || n > b_.size() - at_) {
      ok_ = false;
      v->clear();
      return;
    }
    *v = b_.substr(at_, n);
    at_ += n;
  }
  // The packed status, or an error when the bytes are torn.
  Status GetStatus() {
    const auto code = static_cast<StatusCode>(Raw<uint64_t>());
    std::string message;
    Get(&message);
    if (!ok_) return Internal("sweep: a process's results arrived torn");
    return code == StatusCode::kOk ? Status::Ok() : Status(code, std::move(message));
  }

 private:
  template <typename T>
  T Raw() {
    T v{};
    if (b_.size() - at_ < sizeof v) {
      ok_ = false;
      at_ = b_.size();
      return v;
    }
    std::memcpy(&v, b_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  const std::string& b_;
  size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace

std::string PackFound(const Status& st, const std::vector<size_t>& items,
                      const std::vector<SweepEntry>& entries) {
  Packer p;
  p.Put(st);
  if (!st.ok()) return std::move(p.bytes());
  for (size_t i : items) {
    p.Put(static_cast<uint64_t>(i));
    ForEachFound([&](const auto& v) { p.Put(v); }, entries[i]);
  }
  return std::move(p.bytes());
}

StatusOr<std::vector<size_t>> UnpackFound(const std::string& bytes,
                                          std::vector<SweepEntry>* entries) {
  Unpacker u(bytes);
  PARASIM_RETURN_IF_ERROR(u.GetStatus());
  std::vector<size_t> got;
  while (!u.done()) {
    uint64_t i = 0;
    u.Get(&i);
    SweepEntry found;
    ForEachFound([&](auto& v) { u.Get(&v); }, found);
    if (!u.ok() || i >= entries->size()) {
      return Internal("sweep: a process's results arrived torn");
    }
    CopyFound(found, &(*entries)[i]);
    got.push_back(static_cast<size_t>(i));
  }
  return got;
}

Status SpreadWork(const SweepWorkers& w, const std::vector<size_t>& items,
                  std::vector<SweepEntry>* entries, const std::function<Status(size_t)>& fn,
                  const std::function<void(size_t)>& arrived) {
  if (!w.spread()) return ParallelFor(items, w.jobs, fn);
  const Processes& procs = *w.processes;
  std::vector<size_t> mine;
  for (size_t k = static_cast<size_t>(procs.rank()); k < items.size();
       k += static_cast<size_t>(procs.size())) {
    mine.push_back(items[k]);
  }
  const Status st = ParallelFor(mine, w.jobs, fn);
  PARASIM_ASSIGN_OR_RETURN(std::vector<std::string> all,
                           procs.AllGather(PackFound(st, mine, *entries)));
  // Every process's status first, so that all return the first error by rank.
  for (const std::string& b : all) PARASIM_RETURN_IF_ERROR(Unpacker(b).GetStatus());
  for (int r = 0; r < procs.size(); ++r) {
    if (r == procs.rank()) continue;
    PARASIM_ASSIGN_OR_RETURN(std::vector<size_t> got, UnpackFound(all[r], entries));
    for (size_t i : got) arrived(i);
  }
  return Status::Ok();
}

StatusOr<std::string> ShareFromPrimary(const SweepWorkers& w, const Status& st,
                                       const std::string& text) {
  if (!w.spread()) {
    if (!st.ok()) return st;
    return text;
  }
  Packer p;
  p.Put(st);
  p.Put(text);
  PARASIM_ASSIGN_OR_RETURN(std::vector<std::string> all, w.processes->AllGather(p.bytes()));
  Unpacker u(all[0]);
  PARASIM_RETURN_IF_ERROR(u.GetStatus());
  std::string shared;
  u.Get(&shared);
  if (!u.ok()) return Internal("sweep: rank 0's results file arrived torn");
  return shared;
}

}  // namespace parasim
