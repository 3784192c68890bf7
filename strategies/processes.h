// The processes one sweep is spread over: this process alone, or the ranks of an MPI job
// (`mpirun -np N parasim sweep FILE`, tools/mpi_processes.h). Every process runs the same sweep
// and decides the same: each evaluates its share of a phase's layouts on its own threads, then
// all of them exchange what they found (AllGather), so the pruning state, the counts and the
// ranking are those of one process. Rank 0 writes the results and prints.
//
//   std::vector<std::string> all = *processes.AllGather(mine);  // all[r]: rank r's bytes
#pragma once

#include <string>
#include <vector>

#include "sim/status.h"

namespace parasim {

class Processes {
 public:
  virtual ~Processes() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every process passes its bytes; each gets every process's, in rank order. Collective: all
  // processes call it the same number of times, from one thread each.
  virtual StatusOr<std::vector<std::string>> AllGather(const std::string& mine) const = 0;
};

}  // namespace parasim
