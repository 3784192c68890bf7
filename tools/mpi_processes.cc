#include "tools/mpi_processes.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

#ifdef PARASIM_HAVE_MPI
#include <mpi.h>
#endif

namespace parasim {
namespace {

// The world size a launcher gave this process, 0 when none did: Open MPI's mpirun sets
// OMPI_COMM_WORLD_SIZE, PMI-based launchers (MPICH's Hydra, Slurm's srun) PMI_SIZE, and PMIx
// ones PMIX_RANK without a size.
int LaunchedSize() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(var)) return std::max(1, std::atoi(v));
  }
  return std::getenv("PMIX_RANK") != nullptr ? 1 : 0;
}

}  // namespace

#ifdef PARASIM_HAVE_MPI

MpiProcesses::~MpiProcesses() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

StatusOr<std::vector<std::string>> MpiProcesses::AllGather(const std::string& mine) const {
  // Sizes first (as 64-bit counts, so that no rank's share is cut at 2 GiB silently), then the
  // bytes in chunks that fit MPI's int counts.
  const auto n = static_cast<long long>(mine.size());
  std::vector<long long> sizes(size_);
  if (MPI_Allgather(&n, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD) !=
      MPI_SUCCESS) {
    return Internal("MPI_Allgather of the result sizes failed");
  }
  std::vector<std::string> all(size_);
  for (int r = 0; r < size_; ++r) all[r].resize(static_cast<size_t>(sizes[r]));
  all[rank_] = mine;
  // Each rank broadcasts its bytes in turn: simple, and a sweep exchanges a few MB at most per
  // phase (about 150 bytes a layout).
  constexpr long long kChunk = std::numeric_limits<int>::max() / 2;
  for (int r = 0; r < size_; ++r) {
    for (long long at = 0; at < sizes[r]; at += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, sizes[r] - at));
      if (MPI_Bcast(all[r].data() + at, count, MPI_CHAR, r, MPI_COMM_WORLD) != MPI_SUCCESS) {
        return Internal(fmt::format("MPI_Bcast of rank {}'s results failed", r));
      }
    }
  }
  return all;
}

void MpiProcesses::Abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

StatusOr<std::unique_ptr<MpiProcesses>> StartMpi(int* argc, char*** argv) {
  if (LaunchedSize() == 0) return std::unique_ptr<MpiProcesses>();
  int provided = 0;
  // Only the main thread calls MPI (the sweep's workers never do).
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    return Internal("parasim: MPI_Init_thread failed");
  }
  std::unique_ptr<MpiProcesses> p(new MpiProcesses());
  MPI_Comm_rank(MPI_COMM_WORLD, &p->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &p->size_);
  return p;
}

#else  // built without MPI

MpiProcesses::~MpiProcesses() = default;

StatusOr<std::vector<std::string>> MpiProcesses::AllGather(const std::string& mine) const {
  return std::vector<std::string>{mine};
}

void MpiProcesses::Abort(int code) const { std::_Exit(code); }

StatusOr<std::unique_ptr<MpiProcesses>> StartMpi(int*, char***) {
  if (LaunchedSize() > 1) {
    return FailedPrecondition(
        "parasim: launched by mpirun, but built without MPI (Open MPI's headers were missing "
        "when it was built): install libopenmpi-dev and openmpi-bin, or build through "
        "tools/bazel, which installs them");
  }
  return std::unique_ptr<MpiProcesses>();
}

#endif

}  // namespace parasim
