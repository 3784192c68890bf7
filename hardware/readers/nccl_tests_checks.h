// What an nccl-tests run's rows may be trusted for, before they are measurements:
//
// The data check. nccl-tests compares every result with the expected one and prints, per half of
// a row, the count of wrong elements ("#wrong", nccl-tests 2.13 and later; "N/A" under -c 0) and
// per run the count of failed checks ("# Out of bounds values : N FAILED"). A row whose check
// failed timed a broken transfer: it is left out (said in a note naming its lines); a run whose
// every row failed is refused. The older "error"/"res" column is the largest deviation, whose
// limit depends on the type and rank count, so there only the footer tells; a run whose footer
// counts failures its rows cannot place is refused.
//
// The rank count. The device lines ("#  Rank  3 Group ...") say it; a log without them (pasted
// rows, a trimmed log) only has the header's nThread x nGpus, which counts the GPUs of ONE
// process. nccl-tests prints busbw = algbw x a factor of the op and the rank count n
// (src/<op>.cu, GetBw: all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall, gather, scatter
// (n-1)/n; broadcast, reduce, sendrecv, hypercube 1), so the rows say n where the factor depends
// on it. How the ranks sit on nodes the rows never say: without device lines it is one node when
// one process drove them all, else it must be given (fit --per-node).
//
//   PARASIM_ASSIGN_OR_RETURN(NcclRunShape shape, NcclRunRanks(section, file, {}));
//   PARASIM_ASSIGN_OR_RETURN(NcclPassedRows ok, NcclRowsThatPassed(section, file));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/readers/nccl_tests_log.h"
#include "sim/status.h"

namespace parasim {

// busbw / algbw as nccl-tests computes it for `op` over `n` ranks; nullopt for an op whose
// factor nccl-tests does not state so (alltoallv).
std::optional<double> NcclBusFactor(std::string_view op, int64_t n);

// fit --ranks and --per-node: the shape of runs whose logs have no device lines (0: not given).
struct NcclRanksGiven {
  int64_t ranks = 0;
  int64_t per_node = 0;
};

struct NcclRunShape {
  int64_t ranks = 0;
  int64_t per_node = 0;
  std::string note;  // how the rank count was found, when not from device lines ("" otherwise)
};

// The ranks and ranks per node of run `s` of `file`: its device lines', else found as above.
// Refused, located at the run's first row, when the rows disagree with the header or with
// --ranks, when they leave the count open, or when the ranks per node are unknown.
StatusOr<NcclRunShape> NcclRunRanks(const NcclTestsSection& s, const std::string& file,
                                    const NcclRanksGiven& given);

struct NcclPassedRows {
  std::vector<const NcclTestsRow*> rows;  // those whose data check did not fail (or ran not)
  std::string note;                       // the rows left out, by line; "" when none
};

// The rows of `s` whose data check did not fail; refused as above.
StatusOr<NcclPassedRows> NcclRowsThatPassed(const NcclTestsSection& s, const std::string& file);

}  // namespace parasim
