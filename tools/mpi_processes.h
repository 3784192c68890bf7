// The ranks of an MPI job as the processes of a sweep (strategies/processes.h), with Open MPI
// when parasim was built with it (third_party/mpi.bzl).
//
//   auto mpi = parasim::StartMpi(&argc, &argv);  // null unless launched by mpirun
//   if (!mpi.ok()) ...                            // launched by mpirun, but built without MPI
#pragma once

#include <memory>

#include "sim/status.h"
#include "strategies/processes.h"

namespace parasim {

class MpiProcesses : public Processes {
 public:
  ~MpiProcesses() override;  // MPI_Finalize
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  StatusOr<std::vector<std::string>> AllGather(const std::string& mine) const override;
  // Ends every rank of the job with `code` (MPI_Abort), for a failure only this rank saw.
  [[noreturn]] void Abort(int code) const;

 private:
  friend StatusOr<std::unique_ptr<MpiProcesses>> StartMpi(int* argc, char*** argv);
  MpiProcesses() = default;
  int rank_ = 0;
  int size_ = 1;
};

// MPI_Init when the environment says mpirun (or a PMI launcher such as srun) started this
// process; null otherwise. An error when launched so but built without MPI.
StatusOr<std::unique_ptr<MpiProcesses>> StartMpi(int* argc, char*** argv);

}  // namespace parasim
