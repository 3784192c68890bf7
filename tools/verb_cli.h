// The verbs as CLI11 subcommands: one per verb of the table (tools/verbs/registry.h), each
// flag bound by its declaration (name, type, help, check) to a value the verb's Run then takes.
//
//   CLI::App app{"parasim"};
//   VerbCommands commands(&app, Verbs());
//   app.parse(argc, argv);
//   const Verb& verb = *commands.parsed();
//   verb.run(commands.values(), context);
#pragma once

#include <CLI/CLI.hpp>
#include <vector>

#include "tools/verbs/verb.h"

namespace parasim {

class VerbCommands {
 public:
  // Adds a subcommand to `app` for each verb.
  VerbCommands(CLI::App* app, std::vector<Verb> verbs);
  VerbCommands(const VerbCommands&) = delete;
  VerbCommands& operator=(const VerbCommands&) = delete;

  // The verb whose subcommand was parsed, null before parsing or when none was.
  const Verb* parsed() const;
  // The parsed verb's flag values, one per flag (defaults where not given).
  const std::vector<FlagValue>& values() const;

 private:
  std::vector<Verb> verbs_;
  std::vector<CLI::App*> subcommands_;
  std::vector<std::vector<FlagValue>> values_;  // per verb; bound in place, never resized
};

}  // namespace parasim
