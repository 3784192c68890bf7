// parasim calibrate: runs the calibration program (tools/calibrate, built only with the CUDA
// toolkit) on this node's GPUs, which writes a measurements file for `parasim fit`.
#include <fmt/core.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

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

// The program's arguments for a scenario's own shapes: its GEMMs and attention.
StatusOr<std::string> ScenarioShapes(const Options& o) {
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenarioOf(Document{.file = o.scenario}, o.sets));
  const StepKernels k = StepKernelsOf(s.model, s.training, s.layout);
  std::string shapes;
  for (const auto& g : k.gemms) {
    shapes += fmt::format("{}{}x{}x{}", shapes.empty() ? "" : ",", g.m, g.n, g.k);
  }
  fmt::print(stderr, "{}: {} distinct GEMM shapes ({}), attention {} x {} x {}\n", o.scenario,
             k.gemms.size(), DtypeName(k.dtype), k.attention_batch, k.attention_seq,
             k.attention_head_dim);
  std::string args;
  if (!shapes.empty()) args += " --shapes " + shapes;
  if (k.dtype == Dtype::kFp8) args += " --fp8-shapes";
  return args + fmt::format(" --attention {}x{}x{}", k.attention_batch, k.attention_seq,
                            k.attention_head_dim);
}

StatusOr<Result> Run(const Options& o, const VerbContext& ctx) {
  const std::string prog = CalibrationProgram(ctx.self);
  if (prog.empty()) {
    return InvalidArgument(
        "calibrate:1:1: error: the calibration program is not built (it needs the CUDA toolkit at "
        "build time): run `tools/bazel build //tools/calibrate:parasim-calibrate` on a machine "
        "with /usr/local/cuda, or set PARASIM_CALIBRATE to its path");
  }
  std::string args;
  if (!o.scenario.empty()) {
    PARASIM_ASSIGN_OR_RETURN(args, ScenarioShapes(o));
  }
  Result res{.out = o.out.empty() ? "measurements.yaml" : o.out};
  std::string cmd = fmt::format("'{}' --out '{}'", prog, res.out) + args;
  if (o.quick) cmd += " --quick";
  if (!o.only.empty()) {
    // Goes into a shell command: part names and commas only (the program checks the names).
    if (o.only.find_first_not_of("abcdefghijklmnopqrstuvwxyz,") != std::string::npos) {
      return InvalidArgument(fmt::format(
          "calibrate:1:1: error: --only '{}': expected part names such as gemm,contention "
          "(gemm, memory, attention, host, collectives, contention, sustained)",
          o.only));
    }
    cmd += " --only " + o.only;
  }
  std::fflush(stdout);
  const int rc = std::system(cmd.c_str());
  const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
  if (code == 0) return res;
  return code == 2 ? InvalidArgument("calibrate: the calibration program refused (see above)")
                   : Internal("calibrate: the calibration program failed (see above)");
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
           Opt(&O::scenario, "--scenario", "also time the GEMM shapes of this scenario"),
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
