// A verb of parasim as data: its name, its help, its flags (name, type, help, default, and the
// field of the verb's own options each sets), and a Run that returns a typed result, with one
// JSON view and one text view of that result. The CLI (tools/parasim.cc) and the Python module
// (python/module.cc) both read these declarations (tools/verbs/registry.h lists the verbs).
//
// A verb is one file, tools/verbs/NAME.cc, with its options and result types private to it:
//
//   struct Options {
//     Document scenario;
//     std::vector<std::string> sets;
//     bool full = false;  // the default of --full, in Python too
//   };
//   struct Result { Scenario s; StepReport r; };
//   StatusOr<Result> Run(const Options& o, const VerbContext& ctx) { ... }
//   Json ToJson(const Result& r) { ... }         // what --json prints, what Python returns
//   std::string ToText(const Result& r) { ... }  // what the CLI prints without --json
//
//   Verb RunVerb() {
//     return MakeVerb<Options, Result>({
//         .name = "run",
//         .help = "predict one training step of a scenario's layout",
//         .flags = {Arg(&Options::scenario, "file", "scenario YAML file").Python("scenario")
//                       .Required(),
//                   SetFlag(&Options::sets), JsonFlag(),
//                   Opt(&Options::full, "--full", "replay every rank")},
//         .run = Run, .json = ToJson, .text = ToText});
//   }
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sim/io.h"
#include "sim/json.h"
#include "sim/status.h"
#include "sim/yaml_context.h"
#include "strategies/processes.h"

namespace parasim {

// A YAML document a verb reads: a file, or the text of one handed over by the Python module (a
// dict, as JSON), `file` then being its display name in messages ("<dict>").
struct Document {
  std::string file;
  std::optional<std::string> text;
  bool empty() const { return file.empty() && !text; }
  YamlInput Input() const { return text ? YamlInput(file, *text) : YamlInput(file); }
};

// What one flag holds; the alternative is the type of the options field it sets.
using FlagValue = std::variant<bool, int, int64_t, std::string, std::vector<std::string>, Document>;

// A flag or positional argument, as the CLI and Python read it.
struct Flag {
  std::string name;    // "--jobs", or a positional's name in the CLI's usage ("file")
  std::string python;  // the Python keyword ("jobs", "scenario", "from_"); "" = CLI only
  std::string help;
  FlagValue default_value;  // the verb's options' default
  bool positional = false;
  bool required = false;  // the CLI refuses the command without it
  bool json = false;      // --json: which view the CLI prints (Python always takes the JSON)
  // Accepted integers (CLI11's Range, or PositiveNumber when `positive`).
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
  bool positive = false;
  char delimiter = 0;  // a list flag: also split each value at this character
  // A file the verb reads besides its documents and positionals (which are read), such as
  // compare's --trace; a file it writes (run's --trace, --svg, every --out).
  // CheckOutputsAreNotInputs refuses an output that is an input.
  bool input = false;
  bool output = false;
};

// Where a verb runs: what the CLI or the Python module tells it besides its flags.
struct VerbContext {
  bool json = false;  // the JSON view will be printed (Run then keeps its notes off stderr)
  // The processes a sweep is spread over (mpirun), null = this process alone.
  const Processes* processes = nullptr;
  // argv[0], or the Python module's file: calibrate looks for its program beside it.
  std::string self;
  bool progress = false;  // draw progress on stderr (the CLI, on a terminal)
  // The JSON view lists every layout a verb replayed as flat records ("layouts": the sweep's),
  // not only its leaders: the Python module's wish (a table for pandas).
  bool every_layout = false;
  bool primary() const { return processes == nullptr || processes->rank() == 0; }
};

// A verb's finished result and its views.
class VerbResult {
 public:
  virtual ~VerbResult() = default;
  virtual Json ToJson() const = 0;
  virtual std::string ToText() const = 0;
  // Lines for stderr in both modes (a sweep's counts and rates, --timing); "" = none.
  virtual std::string Notes() const = 0;
};

// A verb as the CLI and the Python module see it: declarations and an erased Run.
struct Verb {
  std::string name;
  std::string help;
  std::vector<Flag> flags;  // in the CLI's order (positionals among them)
  bool under_mpi = false;   // may run under mpirun with more than one process
  // Runs the verb with one value per flag (in `flags` order, of each flag's type).
  std::function<StatusOr<std::unique_ptr<VerbResult>>(const std::vector<FlagValue>&,
                                                      const VerbContext&)>
      run;

  // The flags' defaults, in order: a starting point for the values Run takes.
  std::vector<FlagValue> Defaults() const;
  // Whether `values` asks for the JSON view (the --json flag, where the verb has one).
  bool WantsJson(const std::vector<FlagValue>& values) const;
};

// Checks values against their flags' ranges (the CLI's checks, for callers that bypass it):
// an error such as "--repeat=0:1:1: error: expected a value from 1 to 100000".
Status CheckFlagValues(const std::vector<Flag>& flags, const std::vector<FlagValue>& values);

// Refuses a file a verb would write (a flag marked Output: every --out, run's --trace) that is one
// of the files it reads (its documents, its positional files, flags marked Input), however spelled:
// "s.yaml:1:1: error: --out would overwrite s.yaml, an input of this command; ...".
Status CheckOutputsAreNotInputs(const std::vector<Flag>& flags,
                                const std::vector<FlagValue>& values);

// A bad-input error that names no place (a replay refused as out of range, say) located at the
// verb's input document, "FILE:1:1: error: ...": every exit-2 message names a file. Others are
// returned as they are.
Status LocateAtInput(Status status, const std::vector<FlagValue>& values);

// A flag of options type O: its declaration and the field it sets.
template <typename O>
struct FlagOf {
  Flag flag;
  // The field it sets, and reads for its default; both empty for --json, which sets none. Made
  // where the field's type is known (Opt), so no code is built for types the field does not have.
  std::function<void(O&, const FlagValue&)> set;
  std::function<FlagValue(const O&)> get;

  FlagOf Python(std::string name) && {
    flag.python = std::move(name);
    return std::move(*this);
  }
  FlagOf Required() && {
    flag.required = true;
    return std::move(*this);
  }
  FlagOf Range(int64_t min, int64_t max) && {
    flag.min = min;
    flag.max = max;
    return std::move(*this);
  }
  FlagOf Positive() && {
    flag.positive = true;
    flag.min = 1;
    return std::move(*this);
  }
  FlagOf Delimiter(char c) && {
    flag.delimiter = c;
    return std::move(*this);
  }
  FlagOf Input() && {
    flag.input = true;
    return std::move(*this);
  }
  FlagOf Output() && {
    flag.output = true;
    return std::move(*this);
  }
};

// The Python keyword of a flag: "--max-layouts" -> "max_layouts".
std::string PythonName(const std::string& flag_name);

// An option such as --jobs, setting `field`.
template <typename O, typename T>
FlagOf<O> Opt(T O::*field, std::string name, std::string help) {
  FlagOf<O> f;
  f.flag.python = PythonName(name);
  f.flag.name = std::move(name);
  f.flag.help = std::move(help);
  f.set = [field](O& o, const FlagValue& v) { o.*field = std::get<T>(v); };
  f.get = [field](const O& o) -> FlagValue { return o.*field; };
  return f;
}

// A positional argument ("file"); its Python keyword is its name unless .Python() says.
template <typename O, typename T>
FlagOf<O> Arg(T O::*field, std::string name, std::string help) {
  FlagOf<O> f = Opt(field, std::move(name), std::move(help));
  f.flag.positional = true;
  return f;
}

// --set KEY=VALUE (repeatable), with the help most verbs give it.
template <typename O>
FlagOf<O> SetFlag(std::vector<std::string> O::*field,
                  std::string help = "override a key, e.g. --set parallelism.tp=4 (repeatable)") {
  return Opt(field, "--set", std::move(help));
}

// The most worker threads a verb starts: far past any machine's cores (a thread beyond them only
// waits), and few enough that starting them cannot exhaust the process's threads.
inline constexpr int kMaxJobs = 1024;

// --jobs N: worker threads, 0 = all cores, at most kMaxJobs.
template <typename O>
FlagOf<O> JobsFlag(int O::*field, std::string help = "worker threads (default: all cores)") {
  return Opt(field, "--jobs", fmt::format("{}; at most {}", help, kMaxJobs)).Range(0, kMaxJobs);
}

// --json: the JSON view on stdout instead of the text.
template <typename O>
FlagOf<O> JsonFlag(std::string help = "machine-readable output on stdout, nothing else there") {
  FlagOf<O> f;
  f.flag.name = "--json";
  f.flag.help = std::move(help);
  f.flag.json = true;
  f.flag.default_value = false;
  return f;
}

// A verb's declarations with its typed Run and views; MakeVerb erases the types.
template <typename O, typename R>
struct VerbDef {
  std::string name;
  std::string help;
  std::vector<FlagOf<O>> flags;
  StatusOr<R> (*run)(const O&, const VerbContext&) = nullptr;
  Json (*json)(const R&) = nullptr;
  std::string (*text)(const R&) = nullptr;
  std::string (*notes)(const R&) = nullptr;  // optional
  bool under_mpi = false;
};

namespace verb_internal {

template <typename O, typename R>
class TypedResult : public VerbResult {
 public:
  TypedResult(R r, const VerbDef<O, R>& def)
      : r_(std::move(r)), json_(def.json), text_(def.text), notes_(def.notes) {}
  Json ToJson() const override { return json_(r_); }
  std::string ToText() const override { return text_(r_); }
  std::string Notes() const override { return notes_ ? notes_(r_) : std::string(); }

 private:
  R r_;
  Json (*json_)(const R&);
  std::string (*text_)(const R&);
  std::string (*notes_)(const R&);
};

// Sets the options' fields from the values (one per flag, the --json flag's skipped).
template <typename O>
O OptionsOf(const std::vector<FlagOf<O>>& flags, const std::vector<FlagValue>& values) {
  O o{};
  for (size_t i = 0; i < flags.size() && i < values.size(); ++i) {
    if (flags[i].set) flags[i].set(o, values[i]);
  }
  return o;
}

}  // namespace verb_internal

template <typename O, typename R>
Verb MakeVerb(VerbDef<O, R> def) {
  Verb v;
  v.name = def.name;
  v.help = def.help;
  v.under_mpi = def.under_mpi;
  const O defaults{};
  for (const FlagOf<O>& f : def.flags) {
    Flag flag = f.flag;
    if (f.get) flag.default_value = f.get(defaults);
    v.flags.push_back(std::move(flag));
  }
  v.run = [def = std::move(def), flags = v.flags](
              const std::vector<FlagValue>& values,
              const VerbContext& ctx) -> StatusOr<std::unique_ptr<VerbResult>> {
    ForgetReads();  // (sim/io.h: outputs are checked against what this command reads)
    PARASIM_RETURN_IF_ERROR(CheckFlagValues(flags, values));
    PARASIM_RETURN_IF_ERROR(CheckOutputsAreNotInputs(flags, values));
    StatusOr<R> r = def.run(verb_internal::OptionsOf(def.flags, values), ctx);
    if (!r.ok()) return LocateAtInput(r.status(), values);
    return std::unique_ptr<VerbResult>(
        new verb_internal::TypedResult<O, R>(std::move(r).value(), def));
  };
  return v;
}

}  // namespace parasim
