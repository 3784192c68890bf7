// parasim calibrate: runs the calibration program (tools/calibrate, built only with the CUDA
// toolkit) on this node's GPUs, which writes a measurements file for `parasim fit`.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "hardware/cost_model.h"
#include "scenarios/serving_scenario.h"
#include "strategies/serving_cost.h"
#include "strategies/serving_kernels.h"
#include "strategies/step.h"
#include "tools/verbs/inputs.h"
#include "tools/verbs/verb.h"

namespace parasim {
namespace {

struct Options {
  std::string out;       // "" = measurements.yaml
  std::string scenario;  // also time this scenario's GEMM shapes
  std::vector<std::string> sets;
  bool quick = false;
  std::string only;  // the parts to run (comma-separated), all when empty
};

struct Result {
  std::string out;  // the measurements file written
};

// The program: $PARASIM_CALIBRATE, else beside this binary or `self` (argv[0], or the Python
// module's file) in Bazel's output tree (bazel-bin/tools/calibrate/, also from bazel-bin/python/);
// "" when none is built.
std::string CalibrationProgram(const std::string& self) {
  if (const char* env = std::getenv("PARASIM_CALIBRATE"); env != nullptr && *env != '\0') {
    return env;
  }
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  std::error_code ec;
  if (fs::path me = fs::canonical("/proc/self/exe", ec); !ec) dirs.push_back(me.parent_path());
  if (!self.empty()) {
    const fs::path p = fs::canonical(self, ec);
    dirs.push_back((ec ? fs::path(self) : p).parent_path());
  }
  for (const fs::path& dir : dirs) {
    for (const fs::path& cand : {dir / "calibrate" / "parasim-calibrate", dir / "parasim-calibrate",
                                 dir.parent_path() / "tools" / "calibrate" / "parasim-calibrate"}) {
      if (fs::exists(cand, ec)) return cand.string();
    }
  }
  return "";
}

// The program's arguments for a serving scenario's own shapes: each pool's GEMMs as the replay
// prices them at its calibration token counts (ServingCost::CalibrationTokens); those it prices
// at the FP8 rate in fp8 too, with their rows also rounded up to the 16 that FP8 kernels take
// (CostModel::GemmEfficiency); and each pool's attention over a prompt chunk of mean prompts.
StatusOr<std::vector<std::string>> ServingShapes(const Options& o) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(ServingScenario s,
                           LoadServingScenario(Document{.file = o.scenario}.Input(), o.sets, cat));
  const ServingLayout& l = s.serving.layout;
  std::vector<PoolLayout> pools = {l.unified};
  if (l.disaggregated) pools = {l.prefill, l.decode};
  const ServeFormats f = ServeFormatsOf(s.serving.precision, s.cluster.gpu);
  const bool fp8_rate = f.compute == Dtype::kFp8 && !f.weight_only();
  std::vector<std::array<int64_t, 3>> shapes;
  auto add = [&](int64_t m, int64_t n, int64_t k) {
    const std::array<int64_t, 3> g{m, n, k};
    if (std::find(shapes.begin(), shapes.end(), g) == shapes.end()) shapes.push_back(g);
  };
  bool fp8 = false;
  std::vector<std::string> attention;
  int64_t counts = 0;
  const int64_t prompt = std::max<int64_t>(
      128, static_cast<int64_t>(std::ceil(s.serving.requests.input.Mean() / 128.0)) * 128);
  for (const PoolLayout& pool : pools) {
    PARASIM_ASSIGN_OR_RETURN(
        ServingCost cost,
        ServingCost::Build(s.model, s.cluster, s.serving.precision, pool, s.serving.engine));
    const std::vector<int64_t> tokens = cost.CalibrationTokens();
    counts = std::max(counts, static_cast<int64_t>(tokens.size()));
    for (int64_t t : tokens) {
      for (const ServeGemmShape& g : cost.GemmShapes(t)) {
        add(g.m, g.n, g.k);
        if (g.quantised && fp8_rate) {
          fp8 = true;
          add(Fp8PaddedRows(g.m), g.n, g.k);
        }
      }
    }
    // A chunk of the budget's mean prompts: their heads on a rank, each prompt's tokens (whole
    // multiples of 128, as the attention kernels tile them).
    const int64_t heads = std::max<int64_t>(1, s.model.heads / (pool.dp_attention ? 1 : pool.tp));
    const std::string a =
        fmt::format("{}x{}x{}", heads * std::max<int64_t>(1, cost.engine().max_num_tokens / prompt),
                    prompt, s.model.hd());
    if (std::find(attention.begin(), attention.end(), a) == attention.end()) attention.push_back(a);
  }
  std::string list;
  for (const auto& [m, n, k] : shapes) {
    list += fmt::format("{}{}x{}x{}", list.empty() ? "" : ",", m, n, k);
  }
  const std::string attentions = fmt::format("{}", fmt::join(attention, ","));
  fmt::print(stderr,
             "{}: {} distinct GEMM shapes at up to {} token counts a pool (decode batches up to "
             "engine.max_seqs, prompt chunks up to engine.max_num_tokens){}, attention {}\n",
             o.scenario, shapes.size(), counts, fp8 ? ", those at the FP8 rate in fp8 too" : "",
             attentions);
  std::vector<std::string> args;
  if (!list.empty()) args.insert(args.end(), {"--shapes", list});
  if (fp8) args.push_back("--fp8-shapes");
  args.insert(args.end(), {"--attention", attentions});
  return args;
}

// The program's arguments for a scenario's own shapes: its GEMMs and attention.
StatusOr<std::vector<std::string>> ScenarioShapes(const Options& o) {
  if (IsServingScenario(Document{.file = o.scenario}.Input())) return ServingShapes(o);
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenarioOf(Document{.file = o.scenario}, o.sets));
  const StepKernels k = StepKernelsOf(s.model, s.training, s.layout);
  std::string shapes;
  for (const auto& g : k.gemms) {
    shapes += fmt::format("{}{}x{}x{}", shapes.empty() ? "" : ",", g.m, g.n, g.k);
  }
  fmt::print(stderr, "{}: {} distinct GEMM shapes ({}), attention {} x {} x {}\n", o.scenario,
             k.gemms.size(), DtypeName(k.dtype), k.attention_batch, k.attention_seq,
             k.attention_head_dim);
  std::vector<std::string> args;
  if (!shapes.empty()) args.insert(args.end(), {"--shapes", shapes});
  if (k.dtype == Dtype::kFp8) args.push_back("--fp8-shapes");
  args.insert(args.end(), {"--attention", fmt::format("{}x{}x{}", k.attention_batch,
                                                      k.attention_seq, k.attention_head_dim)});
  return args;
}

// What tells one writing of a file from another: its inode (the program renames a new file
// into place) and its modification time, to the nanosecond.
struct FileStamp {
  ino_t inode = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
std::optional<FileStamp> StampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return FileStamp{st.st_ino, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

// Runs `argv` (argv[0] the program, found on PATH when it names no folder, as the shell did)
// and waits for it: its exit code, or 1 when a signal ended it.
StatusOr<int> RunProgram(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (const int err = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ)) {
    return InvalidArgument(
        fmt::format("calibrate:1:1: error: cannot run {}: {}", argv[0], std::strerror(err)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Internal("calibrate: lost the calibration program");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

StatusOr<Result> Run(const Options& o, const VerbContext& ctx) {
  const std::string prog = CalibrationProgram(ctx.self);
  if (prog.empty()) {
    return InvalidArgument(
        "calibrate:1:1: error: the calibration program is not built (it needs the CUDA toolkit at "
        "build time): run `tools/bazel build //tools/calibrate:parasim-calibrate` on a machine "
        "with /usr/local/cuda, or set PARASIM_CALIBRATE to its path");
  }
  Result res{.out = o.out.empty() ? "measurements.yaml" : o.out};
  // The program runs with an argument vector, never through a shell: a path is one argument
  // whatever it holds (quotes, `;`, spaces).
  std::vector<std::string> argv = {prog, "--out", res.out};
  if (!o.scenario.empty()) {
    PARASIM_ASSIGN_OR_RETURN(std::vector<std::string> shapes, ScenarioShapes(o));
    argv.insert(argv.end(), shapes.begin(), shapes.end());
  }
  // The program writes --out itself: a scenario (or a profile it names) read above is refused as
  // the output before a long measurement overwrites it.
  PARASIM_RETURN_IF_ERROR(RefuseRewritingInput(res.out));
  if (o.quick) argv.push_back("--quick");
  if (!o.only.empty()) {
    // Part names and commas only (the program checks the names).
    if (o.only.find_first_not_of("abcdefghijklmnopqrstuvwxyz,") != std::string::npos) {
      return InvalidArgument(fmt::format(
          "calibrate:1:1: error: --only '{}': expected part names such as gemm,contention "
          "(gemm, memory, attention, host, collectives, contention, sustained)",
          o.only));
    }
    argv.push_back("--only");
    argv.push_back(o.only);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const std::optional<FileStamp> before = StampOf(res.out);  // a file left by an earlier run
  PARASIM_ASSIGN_OR_RETURN(const int code, RunProgram(argv));
  if (code == 2) return InvalidArgument("calibrate: the calibration program refused (see above)");
  if (code != 0) return Internal("calibrate: the calibration program failed (see above)");
  const std::optional<FileStamp> after = StampOf(res.out);
  if (!after || after == before) {
    return Internal(fmt::format("calibrate: the calibration program ended without writing {}{}",
                                res.out, after ? " (the file there is an earlier run's)" : ""));
  }
  return res;
}

Json ToJson(const Result& res) { return Json::Object().Set("out", res.out); }

// The program prints its own progress and summary.
std::string ToText(const Result&) { return ""; }

}  // namespace

Verb CalibrateVerb() {
  using O = Options;
  return MakeVerb<O, Result>({
      .name = "calibrate",
      .help = "measure this node's GPUs (CUDA, cuBLASLt, NCCL) into a measurements file",
      .flags =
          {Opt(&O::out, "--out", "measurements file to write (default measurements.yaml)").Output(),
           Opt(&O::scenario, "--scenario",
               "also time the GEMM shapes of this scenario (a training step's, or a serving "
               "scenario's iterations)"),
           SetFlag(&O::sets, "override a key of --scenario"),
           Opt(&O::quick, "--quick", "fewer shapes, sizes and repetitions"),
           Opt(&O::only, "--only",
               "run these parts only: gemm, memory, attention, host, collectives, "
               "contention, sustained (comma-separated)")},
      .run = Run,
      .json = ToJson,
      .text = ToText,
  });
}

}  // namespace parasim
