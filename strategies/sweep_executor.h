// The sweep's executor: work on threads (ParallelFor) and, under mpirun, spread over processes
// (strategies/processes.h). Each process evaluates its share of a phase's layouts on its own
// threads, then all of them exchange what they found (the fields ForEachFound names), so every
// process ends the phase with every layout's findings, as one process alone would.
//
//   SweepWorkers w{.jobs = 2, .processes = procs};   // procs null: this process alone
//   PARASIM_RETURN_IF_ERROR(SpreadWork(w, items, &entries, evaluate, arrived));
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "sim/status.h"
#include "strategies/processes.h"
#include "strategies/sweep_entry.h"

namespace parasim {

// Runs fn(i) for every i in `items` on `jobs` threads; the first error wins.
Status ParallelFor(const std::vector<size_t>& items, int jobs,
                   const std::function<Status(size_t)>& fn);

// The threads of this process and the processes a sweep runs on.
struct SweepWorkers {
  int jobs = 1;
  const Processes* processes = nullptr;  // null = this process alone
  // Rank 0, or the only process: the one that writes the results and reports.
  bool primary() const { return processes == nullptr || processes->rank() == 0; }
  // More than one process.
  bool spread() const { return processes != nullptr && processes->size() > 1; }
};

// Runs fn(i) for every i in `items` on w.jobs threads. With several processes, each runs the
// items at its rank modulo their number, then all exchange the entries they evaluated:
// `arrived(i)` runs for each entry that another process evaluated, once it is in place. Every
// process returns the first error by rank (so all of them stop together).
Status SpreadWork(const SweepWorkers& w, const std::vector<size_t>& items,
                  std::vector<SweepEntry>* entries, const std::function<Status(size_t)>& fn,
                  const std::function<void(size_t)>& arrived);

// Rank 0's text of the results file to resume from, and whether it could open the file for
// writing (`st`), handed to every process: the text, or on every process rank 0's error.
StatusOr<std::string> ShareFromPrimary(const SweepWorkers& w, const Status& st,
                                       const std::string& text);

// What SpreadWork exchanges: a status, then per entry of `items` its index and its findings.
std::string PackFound(const Status& st, const std::vector<size_t>& items,
                      const std::vector<SweepEntry>& entries);
// Puts the findings packed by PackFound in their places in `entries`: the indices, or the
// packed status when it is an error, or an error for torn bytes.
StatusOr<std::vector<size_t>> UnpackFound(const std::string& bytes,
                                          std::vector<SweepEntry>* entries);

}  // namespace parasim
