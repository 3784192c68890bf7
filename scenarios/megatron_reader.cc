#include "scenarios/megatron_reader.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

#include "sim/yaml_reader.h"

namespace parasim {
namespace {

// A value as a message quotes it: in full up to 60 characters, else its first 57 and "...".
std::string Shown(const std::string& v) { return v.size() <= 60 ? v : v.substr(0, 57) + "..."; }

std::vector<std::string> SplitBlanks(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    std::string item;
    for (char c : v + " ") {
      if (c != ' ' && c != '\t') {
        item += c;
      } else if (!item.empty()) {
        out.push_back(std::move(item));
        item.clear();
      }
    }
  }
  return out;
}

// The value count a row allows, as an error message, or "".
std::string ArityProblem(const MegatronFlag& row, const MegatronArg& a) {
  const size_t n = a.values.size();
  if (row.arity == FlagArity::kBare && n > 0) {
    return fmt::format("takes no value (a switch), got '{}'", Shown(a.values[0]));
  }
  if (row.arity == FlagArity::kOne && n != 1) {
    return n == 0 ? "expects a value"
                  : fmt::format("expects one value, got {} ('{}' ...)", n, Shown(a.values[0]));
  }
  if (row.arity == FlagArity::kList && n == 0) return "expects one or more values";
  return "";
}

}  // namespace

StatusOr<FlagReader> FlagReader::Open(const MegatronArgs& args) {
  FlagReader r(&args);
  std::vector<const MegatronArg*> refused;
  for (const MegatronArg& a : args.args) {
    const MegatronFlag* row = FindMegatronFlag(a.flag);
    if (!row) {
      const std::string near = NearestMegatronFlag(a.flag);
      return args.ErrorAt(
          a,
          fmt::format("unknown Megatron-LM flag '{}'{}; `parasim import megatron --flags` "
                      "lists the {} flags parasim knows (mapped, not modelled, no effect)",
                      Shown(a.flag), near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near),
                      MegatronFlags().size()));
    }
    MegatronArg norm = a;
    if (row->arity == FlagArity::kList) norm.values = SplitBlanks(a.values);
    const std::string problem = ArityProblem(*row, norm);
    if (!problem.empty()) return args.ErrorAt(a, fmt::format("{}: {}", a.flag, problem));
    if (row->use == FlagUse::kRefused) refused.push_back(&a);
    if (r.flags_.find(a.flag) == r.flags_.end()) r.order_.push_back(a.flag);
    r.flags_[a.flag] = std::move(norm);
  }
  if (!refused.empty()) {
    std::string list;
    for (const MegatronArg* a : refused) {
      list += fmt::format("{}{} ({})", list.empty() ? "" : "; ", a->flag,
                          FindMegatronFlag(a->flag)->why);
    }
    return args.ErrorAt(*refused.front(),
                        fmt::format("cannot import: {} flag(s) describe a model parasim cannot "
                                    "build: {}",
                                    refused.size(), list));
  }
  return r;
}

bool FlagReader::Has(std::string_view flag) const { return flags_.find(flag) != flags_.end(); }

const MegatronArg* FlagReader::Get(std::string_view flag) const {
  auto it = flags_.find(flag);
  return it == flags_.end() ? nullptr : &it->second;
}

std::string FlagReader::Value(std::string_view flag, const std::string& fallback) const {
  const MegatronArg* a = Get(flag);
  return a && !a->values.empty() ? a->values[0] : fallback;
}

StatusOr<int64_t> FlagReader::Int(std::string_view flag, int64_t lo, int64_t hi,
                                  int64_t fallback) const {
  const MegatronArg* a = Get(flag);
  if (!a) return fallback;
  const std::string& v = a->values.at(0);
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo || x > hi) {
    return Error(flag,
                 fmt::format("expected an integer from {} to {}, got '{}'", lo, hi, Shown(v)));
  }
  return static_cast<int64_t>(x);
}

StatusOr<double> FlagReader::Number(std::string_view flag, double lo, double hi,
                                    double fallback) const {
  const MegatronArg* a = Get(flag);
  if (!a) return fallback;
  const std::string& v = a->values.at(0);
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x >= lo && x <= hi)) {
    return Error(flag, fmt::format("expected a number from {} to {}, got '{}'", lo, hi, Shown(v)));
  }
  return x;
}

StatusOr<std::string> FlagReader::Choice(std::string_view flag,
                                         const std::vector<std::string_view>& accepted,
                                         const std::string& fallback) const {
  const MegatronArg* a = Get(flag);
  if (!a) return fallback;
  const std::string& v = a->values.at(0);
  if (std::find(accepted.begin(), accepted.end(), v) != accepted.end()) return v;
  std::string list;
  for (std::string_view s : accepted) list += fmt::format("{}{}", list.empty() ? "" : ", ", s);
  const std::string near = DidYouMean(v, accepted);
  return Error(flag, fmt::format("'{}' is not accepted; expected one of: {}{}", Shown(v), list,
                                 near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
}

Status FlagReader::Error(std::string_view flag, const std::string& message) const {
  const MegatronArg* a = Get(flag);
  MegatronArg none;
  return args_->ErrorAt(a ? *a : none, fmt::format("{}: {}", flag, message));
}

std::string FlagReader::Text(std::string_view flag) const {
  const MegatronArg* a = Get(flag);
  if (!a) return "";
  std::string out = a->flag;
  for (const std::string& v : a->values) out += " " + v;
  return out;
}

std::string FlagReader::At(std::string_view flag) const {
  const MegatronArg* a = Get(flag);
  return a ? args_->Where(*a) : "";
}

std::vector<const MegatronArg*> FlagReader::Given() const {
  std::vector<const MegatronArg*> out;
  for (const std::string& f : order_) out.push_back(&flags_.at(f));
  return out;
}

}  // namespace parasim
