#include "tools/verb_cli.h"

#include <type_traits>
#include <utility>
#include <vector>

namespace parasim {
namespace {

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

// Binds one flag to its value, by the value's type.
CLI::Option* Bind(CLI::App* sub, const Flag& f, FlagValue* value) {
  return std::visit(
      [&](auto& v) -> CLI::Option* {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return sub->add_flag(f.name, v, f.help);
        } else if constexpr (std::is_same_v<T, Document>) {
          return sub->add_option(f.name, v.file, f.help);
        } else if constexpr (IsVector<T>::value) {
          // One value each time the flag is given, as its help says ("repeatable"): else
          // `--set a=1 s.yaml --json` took the file as a second value and wanted a file.
          // (A positional list, such as fit's MEASUREMENTS..., takes them all.)
          return sub->add_option(f.name, v, f.help)->allow_extra_args(f.positional);
        } else {
          return sub->add_option(f.name, v, f.help);
        }
      },
      *value);
}

void AddChecks(const Flag& f, CLI::Option* opt) {
  if (f.required) opt->required();
  if (f.positive) {
    // CLI11's PositiveNumber says "not in range 0.000000 to" a 309-digit number.
    opt->check(CLI::Validator(
        [](std::string& text) -> std::string {
          double v = 0;
          const bool number = CLI::detail::lexical_cast(text, v);
          if (number && v > 0) return "";
          return "expected a number more than 0, got " + text;
        },
        "POSITIVE"));
  } else if (f.min != std::numeric_limits<int64_t>::min() ||
             f.max != std::numeric_limits<int64_t>::max()) {
    opt->check(CLI::Range(f.min, f.max));
  }
  if (f.delimiter != 0) opt->delimiter(f.delimiter);
  // A file given as nothing (--out '') is no file: it had fallen back to the default name.
  if (f.input || f.output) {
    opt->check(CLI::Validator(
        [](std::string& text) -> std::string {
          return text.empty() ? "expected a file name, got nothing" : "";
        },
        "FILE"));
  }
}

}  // namespace

VerbCommands::VerbCommands(CLI::App* app, std::vector<Verb> verbs) : verbs_(std::move(verbs)) {
  values_.resize(verbs_.size());
  for (size_t i = 0; i < verbs_.size(); ++i) {
    const Verb& verb = verbs_[i];
    CLI::App* sub = app->add_subcommand(verb.name, verb.help);
    subcommands_.push_back(sub);
    values_[i] = verb.Defaults();
    for (size_t k = 0; k < verb.flags.size(); ++k) {
      AddChecks(verb.flags[k], Bind(sub, verb.flags[k], &values_[i][k]));
    }
  }
}

const Verb* VerbCommands::parsed() const {
  for (size_t i = 0; i < verbs_.size(); ++i) {
    if (subcommands_[i]->parsed()) return &verbs_[i];
  }
  return nullptr;
}

const std::vector<FlagValue>& VerbCommands::values() const {
  static const std::vector<FlagValue> kNone;
  for (size_t i = 0; i < verbs_.size(); ++i) {
    if (subcommands_[i]->parsed()) return values_[i];
  }
  return kNone;
}

}  // namespace parasim
