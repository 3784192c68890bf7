// Kernel classes as data: the kind of a GPU kernel (GEMM, attention, communication, copy,
// memset, normalization, element-wise) and its family (NCCL, DeepEP dispatch, cuBLAS nvjet,
// FlashAttention, ...) told from its name by a table of glob patterns,
// hardware/readers/kernel_classes.yaml, built into the binary. The first row whose pattern
// matches the whole name (ignoring case) wins; the file documents the order and cites, for each
// pattern, the library that names its kernels so. A user file in the same format goes before the
// built-in rows, or replaces them (`replace: true`).
//
//   PARASIM_ASSIGN_OR_RETURN(KernelClassTable table, LoadKernelClasses(user_file_or_empty));
//   KernelMatch m = table.Classify("void dpsk::ep::internode::dispatch<false, 8>(...)");
//   // m.kind == KernelClass::kCommunication, m.family == "DeepEP dispatch"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/readers/profiler_trace.h"
#include "sim/status.h"

namespace parasim {

enum class KernelClass : uint8_t {
  kGemm,
  kAttention,
  kCommunication,
  kMemcpy,
  kMemset,
  kNormalization,
  kElementwise,
};
inline constexpr int kNumKernelClasses = 7;
// "GEMM", "attention", "communication", "memcpy", "memset", "normalization", "element-wise".
std::string_view KernelClassName(KernelClass k);
// The key of a class in kernel_classes.yaml: gemm, attention, communication, memcpy, memset,
// normalization, elementwise.
std::string_view KernelClassKey(KernelClass k);
StatusOr<KernelClass> ParseKernelClass(std::string_view key);

struct KernelClassRow {
  KernelClass kind = KernelClass::kElementwise;
  std::string family;
  std::vector<std::string> patterns;  // lower-cased globs
  std::string where;                  // "file:line" of the row, for listings and errors
};

struct KernelMatch {
  KernelClass kind = KernelClass::kElementwise;
  std::string_view family;  // points into the table (which must outlive it)
  int row = -1;             // index of the row that matched; -1: none (kElementwise, "unmatched")
};

class KernelClassTable {
 public:
  // kernel_classes.yaml text. `file` names it in errors ("kernel_classes.yaml:12:5: error: ...").
  static StatusOr<KernelClassTable> Parse(std::string_view yaml, const std::string& file);
  // The built-in table.
  static StatusOr<KernelClassTable> Builtin();

  KernelMatch Classify(std::string_view name) const;
  // A copy or memset by the trace's category; a kernel by its name.
  KernelMatch Classify(std::string_view name, GpuEventCategory category) const;
  // One match per entry of trace.names (each name classified once).
  std::vector<KernelMatch> ClassifyNames(const ProfilerTrace& trace) const;

  const std::vector<KernelClassRow>& rows() const { return rows_; }
  bool replaces() const { return replace_; }
  // This table's rows, then `base`'s (unless this table replaces them).
  KernelClassTable Over(const KernelClassTable& base) const;

 private:
  std::vector<KernelClassRow> rows_;
  bool replace_ = false;
};

// The built-in table, with the rows of `user_file` first when it is not empty.
StatusOr<KernelClassTable> LoadKernelClasses(const std::string& user_file = "");

// Whether `text` matches the glob `pattern` as a whole ('*' any run, '?' one character). Both
// are compared byte for byte: lower-case them first to ignore case.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace parasim
