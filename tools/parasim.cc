// parasim: the command-line interface (SCENARIO.md "CLI verbs").
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
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tools/commands.h"
#include "tools/mpi_processes.h"

int main(int argc, char** argv) {
  using parasim::CommonOptions;
  // A replay allocates and frees a few hundred kilobytes to a few megabytes of vectors (a sweep:
  // one layout after another, per thread). With glibc's defaults those blocks are mmap'd, or
  // trimmed from the heap's top, on every free, and the next replay pays page faults to touch
  // them again: measured with `run --timing --repeat 300` on this project's 2-core machine,
  // Llama 3 405B on 16K H100 replayed in 7.1 ms with the defaults and 4.0 ms with freed memory
  // kept. Blocks up to 64 MiB come from the heap, and up to 256 MiB of free heap stays mapped.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  // Under mpirun every rank runs this program; `sweep` spreads its layouts over them and rank 0
  // prints (README "Sweeps over many machines").
  auto started = parasim::StartMpi(&argc, &argv);
  if (!started.ok()) {
    fmt::print(stderr, "{}\n", started.status().message());
    return started.status().exit_code();
  }
  std::unique_ptr<parasim::MpiProcesses> mpi = std::move(started).value();
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

  CommonOptions opt;
  auto common = [&](CLI::App* sub, bool needs_file, const char* file_help) {
    if (needs_file) sub->add_option("file", opt.file, file_help)->required();
    sub->add_option("--set", opt.sets, "override a key, e.g. --set parallelism.tp=4 (repeatable)");
    sub->add_flag("--json", opt.json, "machine-readable output on stdout, nothing else there");
  };
  auto* run = app.add_subcommand("run", "predict one training step of a scenario's layout");
  common(run, true, "scenario YAML file");
  run->add_flag("--timing", opt.timing,
                "print replay_ms (lowering + replay at sweep granularity) on stderr");
  run->add_option("--repeat", opt.repeat,
                  "with --timing: lower and replay N times in this process and print the first, "
                  "median and fastest (the replay-speed benchmark)")
      ->check(CLI::Range(1, 100000));
  run->add_flag("--full", opt.full, "replay every rank instead of one per pipeline stage");
  run->add_option("--trace", opt.trace, "write an op-level Chrome trace (Perfetto) to FILE");
  run->add_option("--svg", opt.svg, "write the pipeline timeline of the step as SVG to FILE");
  run->add_flag("--ops", opt.ops,
                "replay at op granularity (one task per op) instead of per micro-batch phase");
  auto* memory =
      app.add_subcommand("memory", "memory per GPU, per pipeline stage, and whether it fits");
  common(memory, true, "scenario YAML file");
  auto* sweep = app.add_subcommand(
      "sweep",
      "replay the layouts of the scenario's sweep block that can enter the ranking, and rank "
      "them by its objective");
  common(sweep, true, "scenario YAML file with a sweep block");
  sweep->add_option("--jobs", opt.jobs, "worker threads (default: all cores)");
  sweep->add_option("--out", opt.out, "write every layout's result to this CSV as results arrive");
  sweep->add_flag("--resume", opt.resume, "skip layouts already in --out (after an interruption)");
  sweep->add_flag("--exhaustive", opt.exhaustive,
                  "replay every layout that fits, also those whose lower bounds cannot enter "
                  "the top or the Pareto front (same ranking, slower)");
  sweep->add_flag("--robust", opt.robust,
                  "replay the leaders again with each of the cost model's least certain "
                  "parameters swung in turn, and say whether #1 stays first");
  sweep
      ->add_option("--batch", opt.batch,
                   "replays decided together, at most the workers that replay at once "
                   "(threads x MPI ranks; default 16); changes the pruned and replayed counts, "
                   "not the ranking or the Pareto front")
      ->check(CLI::Range(1, 1 << 20));
  sweep->add_option("--max-layouts", opt.max_layouts, "refuse sweeps larger than this")
      ->check(CLI::PositiveNumber);
  auto* scale = app.add_subcommand(
      "scale", "best layout at each GPU count: speedup, efficiency, Amdahl fit, and advice");
  common(scale, true, "scenario YAML file");
  std::string gpus_text;
  scale->add_option("--gpus", gpus_text,
                    "GPU counts, e.g. 8,16,64 or 8,16,...,4096 (doubling); default: one node "
                    "up to the scenario's cluster");
  scale->add_flag("--weak", opt.weak, "keep the batch per GPU instead of the global batch");
  scale->add_option("--jobs", opt.jobs, "worker threads (default: all cores)");
  auto* validate = app.add_subcommand(
      "validate", "predict every case of a validation file and compare with the measurements");
  common(validate, true, "validation YAML file (SCENARIO.md \"Validation file\")");
  validate->add_option("--jobs", opt.jobs, "worker threads for the cases' sweeps");
  validate->add_flag("--markdown", opt.markdown, "print the table as Markdown (docs/MODEL.md)");
  validate->add_flag("--robust", opt.robust,
                     "also replay each case's layout under sweep --robust's swings, and say for "
                     "how many cases the measured step lies within the range they span");
  auto* fit = app.add_subcommand(
      "fit", "fit the cost model to measurements (parasim calibrate output or nccl-tests logs)");
  fit->add_option("measurements", opt.inputs, "measurement files and nccl-tests logs");
  fit->add_option("--runs", opt.runs,
                  "fit sustained factor, launch overhead and inter-node efficiency to the step "
                  "times of this validation-format file (measured jobs); repeat to fit several "
                  "together");
  fit->add_option("--params", opt.params,
                  "with --runs: fit only these (sustained_factor, launch_overhead, host_op_time, "
                  "efficiency); "
                  "the others keep the scenario's values")
      ->delimiter(',');
  fit->add_option("--jobs", opt.jobs, "worker threads for the cases' sweeps");
  fit->add_option("--gpu", opt.gpu, "catalog id of the GPU measured (default: from the files)");
  fit->add_option("--op", opt.op,
                  "collective of nccl-tests logs too old to name their program (all_reduce, "
                  "all_gather, reduce_scatter, alltoall, sendrecv)");
  fit->add_option("--intra", opt.intra, "intra-node fabric measured (default: the GPU's NVLink)");
  fit->add_option("--inter", opt.inter, "inter-node fabric measured (default: the GPU's IB)");
  fit->add_option("--out", opt.out, "write the calibration profile here");
  fit->add_option(
      "--set", opt.sets,
      "with --runs: override a key in every case, e.g. --set "
      "training.grad_accumulation=separate (repeatable); unused with measurement files");
  fit->add_flag("--json", opt.json, "machine-readable output on stdout");
  auto* calibrate = app.add_subcommand(
      "calibrate", "measure this node's GPUs (CUDA, cuBLASLt, NCCL) into a measurements file");
  calibrate->add_option("--out", opt.out, "measurements file to write (default measurements.yaml)");
  calibrate->add_option("--scenario", opt.scenario, "also time the GEMM shapes of this scenario");
  calibrate->add_option("--set", opt.sets, "override a key of --scenario");
  calibrate->add_flag("--quick", opt.quick, "fewer shapes, sizes and repetitions");
  calibrate->add_option("--only", opt.only,
                        "run these parts only: gemm, memory, attention, host, collectives, "
                        "contention, sustained (comma-separated)");
  auto* report = app.add_subcommand(
      "report", "a self-contained HTML report: timeline, memory, where the time goes, sweep");
  report->add_option("file", opt.file, "scenario YAML file");
  report->add_option("--set", opt.sets, "override a key, e.g. --set parallelism.tp=4 (repeatable)");
  report->add_flag("--json", opt.json, "machine-readable output on stdout");
  report->add_option("--from", opt.from, "a finished `sweep --json` or `scale --json` output");
  report->add_option("--out", opt.out, "HTML file to write (default report.html)");
  report->add_option("--jobs", opt.jobs, "worker threads for the scenario's sweep, if any");
  report->add_flag("--robust", opt.robust,
                   "with a sweep: add how far its answer holds (sweep --robust's swings)");
  report->add_option("--vs", opt.vs, "add a what-if section comparing with scenario B");
  report->add_option("--set-a", opt.sets_a, "with --vs: override a key of this scenario only");
  report->add_option("--set-b", opt.sets_b, "with --vs: override a key of B only");
  auto* diff = app.add_subcommand(
      "diff", "two what-ifs side by side: step time by component, memory per stage, MFU, why");
  diff->add_option("file", opt.file, "scenario A")->required();
  diff->add_option("b", opt.vs, "scenario B (default: A again, under --set-b)");
  diff->add_option("--set", opt.sets, "override a key of both sides (repeatable)");
  diff->add_option("--set-a", opt.sets_a, "override a key of A only, e.g. parallelism.tp=4");
  diff->add_option("--set-b", opt.sets_b, "override a key of B only, e.g. parallelism.tp=8");
  diff->add_flag("--json", opt.json, "machine-readable output on stdout, nothing else there");
  auto* compare = app.add_subcommand(
      "compare", "a PyTorch profiler trace of one step against the replay of the same rank");
  common(compare, true, "scenario YAML file of the profiled job");
  compare
      ->add_option("--trace", opt.trace_in,
                   "Kineto Chrome trace of one step on one rank (.json or .json.gz)")
      ->required();
  compare->add_option("--stage", opt.stage, "pipeline stage the traced rank runs (default 0)");
  compare->add_option("--out", opt.out, "write the measured efficiencies as a calibration profile");
  auto* catalog = app.add_subcommand("catalog", "list catalog GPUs, fabrics and models");
  common(catalog, false, "");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (!primary) return e.get_exit_code() == 0 ? 0 : 2;  // rank 0 prints
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (mpi != nullptr && mpi->size() > 1 && !sweep->parsed()) {
    if (primary) {
      fmt::print(stderr,
                 "parasim: only `sweep` runs under mpirun ({} processes); run `{}` as one "
                 "process\n",
                 mpi->size(), app.get_subcommands().front()->get_name());
    }
    return 2;
  }
  opt.processes = mpi.get();
  try {
    parasim::Status st;
    if (run->parsed()) st = parasim::RunCommand(opt);
    if (memory->parsed()) st = parasim::MemoryCommand(opt);
    if (catalog->parsed()) st = parasim::CatalogCommand(opt);
    if (sweep->parsed()) st = parasim::SweepCommand(opt);
    if (validate->parsed()) st = parasim::ValidateCommand(opt);
    if (fit->parsed()) st = parasim::FitCommand(opt);
    if (report->parsed()) st = parasim::ReportCommand(opt);
    if (diff->parsed()) st = parasim::DiffCommand(opt);
    if (compare->parsed()) st = parasim::CompareCommand(opt);
    if (calibrate->parsed()) st = parasim::CalibrateCommand(opt, argv[0]);
    if (scale->parsed()) {
      auto counts = parasim::ParseGpuList(gpus_text);
      st = counts.ok() ? (opt.gpus = *counts, parasim::ScaleCommand(opt)) : counts.status();
    }
    if (!st.ok()) {
      // Every rank of a sweep returns the same error (strategies/processes.h); rank 0 says it.
      if (primary) fmt::print(stderr, "{}\n", st.message());
      return st.exit_code();
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "parasim: internal error: {}\n", e.what());
    // The other ranks may wait on this one in a collective: end them all.
    if (mpi != nullptr && mpi->size() > 1) mpi->Abort(1);
    return 1;
  }
}
