// parasim: the command-line interface (SCENARIO.md "CLI verbs"; docs/VERBS.md). One subcommand
// per verb of the table in tools/verbs/registry.h.
//
//   parasim run scenarios/gpt3-175b-1024-a100.yaml [--set parallelism.tp=4] [--json]
//   parasim catalog [--json]
//
// Exit codes: 0 success, 2 bad input (message on stderr with file:line:col), 1 internal failure.
#include <fmt/core.h>
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "tools/mpi_processes.h"
#include "tools/verb_cli.h"
#include "tools/verbs/registry.h"

namespace parasim {
namespace {

// A replay allocates and frees a few hundred kilobytes to a few megabytes of vectors (a sweep:
// one layout after another, per thread). With glibc's defaults those blocks are mmap'd, or
// trimmed from the heap's top, on every free, and the next replay pays page faults to touch
// them again: measured with `run --timing --repeat 300` on this project's 2-core machine,
// Llama 3 405B on 16K H100 replayed in 7.1 ms with the defaults and 4.0 ms with freed memory
// kept. Blocks up to 64 MiB come from the heap, and up to 256 MiB of free heap stays mapped.
void KeepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
}

// Runs the parsed verb and prints its result (rank 0 alone under mpirun): the JSON view with
// --json, else the text; its notes on stderr. Returns the exit code.
int RunAndPrint(const Verb& verb, const std::vector<FlagValue>& values, const VerbContext& ctx) {
  auto result = verb.run(values, ctx);
  if (!result.ok()) {
    // Every rank of a sweep returns the same error (strategies/processes.h); rank 0 says it.
    if (ctx.primary()) fmt::print(stderr, "{}\n", result.status().message());
    return result.status().exit_code();
  }
  if (!ctx.primary()) return 0;
  const std::string notes = (*result)->Notes();
  if (!notes.empty()) fmt::print(stderr, "{}", notes);
  if (ctx.json) {
    fmt::print("{}\n", (*result)->ToJson().Dump());
  } else {
    fmt::print("{}", (*result)->ToText());
  }
  return 0;
}

int Main(int argc, char** argv) {
  KeepFreedMemory();
  // Under mpirun every rank runs this program; `sweep` spreads its layouts over them and rank 0
  // prints (docs/ARCHITECTURE.md, "Sweeps over many machines").
  auto started = StartMpi(&argc, &argv);
  if (!started.ok()) {
    fmt::print(stderr, "{}\n", started.status().message());
    return started.status().exit_code();
  }
  std::unique_ptr<MpiProcesses> mpi = std::move(started).value();
  const bool primary = mpi == nullptr || mpi->rank() == 0;
  if (!primary && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
  // Under `bazel run` the working directory is the runfiles tree; resolve the user's relative
  // paths from where they typed the command.
  if (const char* wd = std::getenv("BUILD_WORKING_DIRECTORY")) {
    if (chdir(wd) != 0) std::perror("parasim: chdir");
  }
  CLI::App app{
      "parasim: a discrete-event cluster simulator for planning large-model training.\n"
      "Predicts step time, bubbles, exposed communication and memory per GPU of a\n"
      "TP x PP x DP (x CP x EP, ZeRO, recompute) layout from a YAML scenario.",
      "parasim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parasim 0.1");
  VerbCommands commands(&app, Verbs());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (!primary) return e.get_exit_code() == 0 ? 0 : 2;  // rank 0 prints
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  const Verb& verb = *commands.parsed();
  if (mpi != nullptr && mpi->size() > 1 && !verb.under_mpi) {
    if (primary) {
      fmt::print(stderr,
                 "parasim: only `sweep` runs under mpirun ({} processes); run `{}` as one "
                 "process\n",
                 mpi->size(), verb.name);
    }
    return 2;
  }
  const VerbContext ctx{.json = verb.WantsJson(commands.values()),
                        .processes = mpi.get(),
                        .self = argv[0],
                        .progress = isatty(fileno(stderr)) != 0};
  try {
    return RunAndPrint(verb, commands.values(), ctx);
  } catch (const std::exception& e) {
    fmt::print(stderr, "parasim: internal error: {}\n", e.what());
    // The other ranks may wait on this one in a collective: end them all.
    if (mpi != nullptr && mpi->size() > 1) mpi->Abort(1);
    return 1;
  }
}

}  // namespace
}  // namespace parasim

int main(int argc, char** argv) { return parasim::Main(argc, argv); }
