// The verbs of parasim, as a table: the CLI (tools/parasim.cc) builds one subcommand per verb
// from it and the Python module (python/module.cc) one function per verb, both from the same
// declarations (tools/verbs/verb.h), so every verb has the same flags, defaults and results in
// both.
//
// Adding a verb is one new file and one line of the table (and its section in the reference):
//   1. tools/verbs/NAME.cc: its Options (a field per flag, with the default), its Result, a Run
//      that returns the Result, ToJson and ToText views of it (the text reads the Result's fields
//      and computes nothing the JSON lacks; domain numbers live in strategies/), and
//      `Verb NameVerb()` declaring its name, help and flags (tools/verbs/verb.h shows one).
//   2. one line `X(NameVerb)` in PARASIM_VERBS below.
//   3. a section "## `parasim NAME`" in docs/VERBS.md with a row per flag, which
//      //tools:verbs_test asks for (with the contract every verb's declarations keep).
// tools/BUILD globs tools/verbs/*.cc, so no BUILD edit is needed unless the verb uses a library
// no verb used before (then one line in the verbs target's deps). The CLI gains
// `parasim NAME --help` and Python `parasim.NAME(...)`, with the flags as keywords.
//
// Verbs to come fit the same shape: `serve` (a serving scenario's latency and throughput: a
// Result with the figures, a JSON and a text view of them), as `import` does (a launch
// configuration in, a scenario out: positionals, --out, a Result naming the keys it wrote).
//
//   for (const Verb& v : Verbs()) app.add_subcommand(v.name, v.help);
#pragma once

#include <string_view>
#include <vector>

#include "tools/verbs/verb.h"

namespace parasim {

// One line per verb: the function of tools/verbs/<verb>.cc that declares it. The order is
// `parasim --help`'s.
#define PARASIM_VERBS(X) \
  X(RunVerb)             \
  X(ServeVerb)           \
  X(MemoryVerb)          \
  X(SweepVerb)           \
  X(ScaleVerb)           \
  X(ValidateVerb)        \
  X(FitVerb)             \
  X(CalibrateVerb)       \
  X(ReportVerb)          \
  X(DiffVerb)            \
  X(CompareVerb)         \
  X(CatalogVerb)         \
  X(ImportVerb)

#define PARASIM_DECLARE_VERB(f) Verb f();
PARASIM_VERBS(PARASIM_DECLARE_VERB)
#undef PARASIM_DECLARE_VERB

// Every verb, in the table's order (built on each call: the verbs hold no state).
std::vector<Verb> Verbs();

}  // namespace parasim
