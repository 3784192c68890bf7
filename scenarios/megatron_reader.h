// Typed, located reading of Megatron-LM flags (scenarios/megatron_args.h) against the flag
// table (scenarios/megatron_flags.h): every flag must have a row and the number of values its
// row allows; the importer then reads the mapped ones by name, and the reader remembers which
// it read. Errors name the flag's file:line:col and what would be accepted:
//   model_config.yaml:7:3: error: --num-layers: expected an integer from 1 to 100000, got 'x'
//
//   PARASIM_ASSIGN_OR_RETURN(FlagReader r, FlagReader::Open(args));
//   PARASIM_ASSIGN_OR_RETURN(int64_t layers, r.Int("--num-layers", 1, 100000));
//   if (r.Has("--swiglu")) ...
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/megatron_args.h"
#include "scenarios/megatron_flags.h"
#include "sim/status.h"

namespace parasim {

class FlagReader {
 public:
  // Checks every flag against the table: unknown flags (with the nearest known one), values
  // its row does not allow, and flags that describe a model parasim cannot build (all of them
  // named in one message). A list flag's values are split at blanks ("2 2" -> 2, 2). The last
  // of a repeated flag counts, as in argparse.
  static StatusOr<FlagReader> Open(const MegatronArgs& args);

  bool Has(std::string_view flag) const;
  const MegatronArg* Get(std::string_view flag) const;
  // The flag's one value, or `fallback` when absent.
  std::string Value(std::string_view flag, const std::string& fallback = "") const;
  // An integer value in [lo, hi]; `fallback` when absent.
  StatusOr<int64_t> Int(std::string_view flag, int64_t lo, int64_t hi, int64_t fallback = 0) const;
  StatusOr<double> Number(std::string_view flag, double lo, double hi, double fallback = 0) const;
  // One of `accepted` (exactly as written); `fallback` when absent.
  StatusOr<std::string> Choice(std::string_view flag, const std::vector<std::string_view>& accepted,
                               const std::string& fallback = "") const;
  // "file:line:col: error: --flag: MESSAGE".
  Status Error(std::string_view flag, const std::string& message) const;
  // "--flag VALUE" as given, for the scenario's comments ("" when absent).
  std::string Text(std::string_view flag) const;
  // file:line:col of the flag ("" when absent).
  std::string At(std::string_view flag) const;
  const MegatronArgs& args() const { return *args_; }
  // The flags given, in order (each once: its last occurrence).
  std::vector<const MegatronArg*> Given() const;

 private:
  explicit FlagReader(const MegatronArgs* args) : args_(args) {}
  const MegatronArgs* args_;
  std::map<std::string, MegatronArg, std::less<>> flags_;  // values normalised
  std::vector<std::string> order_;
};

}  // namespace parasim
