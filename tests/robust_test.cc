// Issue 62: inputs that crashed, hung, read without end or answered wrongly with exit 0 are
// refused with exit 2 and a located message saying what is accepted (or answered correctly):
// non-regular files given to every reader, --set keys out of shape, --jobs past its cap, writes
// that fail or would overwrite an input, a tampered --resume file, a validation case with an
// invalid layout, and the newcomer's input-handling texts. Every command runs under `timeout`,
// so a hang fails the test rather than stalling it.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli_runner.h"

namespace parasim {
namespace {

using testing::CliResult;
using testing::Runfile;
using testing::RunShell;
using testing::Slurp;

// `parasim ARGS`, killed after 30 s (exit 124): far past what each takes, under ASan too.
CliResult Parasim(const std::string& args) {
  return RunShell("timeout 30 " + Runfile("tools/parasim") + " " + args);
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Exit 2 with a message located at `where` (file:line:col) that holds `says`.
void RefusedAt(const CliResult& r, const std::string& where, const std::string& says) {
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(where + ": error: ") != std::string::npos);
  CHECK(r.err.find(says) != std::string::npos);
}

const std::string kScenario = "scenarios/llama2-7b-ddp-8-a100.yaml";

TEST_CASE("a directory, a FIFO or a device is refused by every reader, never read") {
  const std::string dir = TempDir() + "/adir";
  const std::string fifo = TempDir() + "/afifo";
  ::mkdir(dir.c_str(), 0755);
  ::mkfifo(fifo.c_str(), 0644);
  const std::string s = Runfile(kScenario);
  struct Case {
    std::string path, says;
  };
  const std::vector<Case> paths = {{dir, "is a directory, not a regular file"},
                                   {fifo, "is a FIFO (named pipe), not a regular file"},
                                   {"/dev/zero", "is a character device, not a regular file"}};
  for (const Case& c : paths) {
    CAPTURE(c.path);
    // The scenario of each verb that reads one, a validation file, report --from, a calibration
    // profile, a measurements file, a --runs file and a trace.
    for (const std::string verb : {"run", "memory", "sweep", "scale", "report"}) {
      CAPTURE(verb);
      RefusedAt(Parasim(verb + " " + c.path), c.path + ":1:1", c.says);
    }
    RefusedAt(Parasim("diff " + c.path + " " + s), c.path + ":1:1", c.says);
    RefusedAt(Parasim("validate " + c.path), c.path + ":1:1", c.says);
    RefusedAt(Parasim("report --from " + c.path), c.path + ":1:1", c.says);
    RefusedAt(Parasim("run " + s + " --set cluster.calibration=" + c.path), c.path + ":1:1",
              c.says);
    RefusedAt(Parasim("fit " + c.path), c.path + ":1:1", c.says);
    // A folder is a trace per rank (issue 61): an empty one is refused for holding none.
    RefusedAt(Parasim("compare " + s + " --trace " + c.path), c.path + ":1:1",
              c.path == dir ? "no traces (*.json, *.json.gz) in the folder" : c.says);
  }
}

TEST_CASE("--set keys: bounded depth, no empty segment, no null, errors at the option") {
  const std::string s = Runfile(kScenario);
  // 20,000 segments overflowed the stack; now refused at once.
  std::string deep = "training";
  for (int i = 0; i < 20000; ++i) deep += ".a";
  const CliResult r = Parasim("run " + s + " --set " + deep + "=1");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("segments deep") != std::string::npos);
  CHECK(r.err.size() < 2000);  // the option is echoed cut short
  RefusedAt(Parasim("run " + s + " --set parallelism.dp.=4"), "--set parallelism.dp.=4:1:22",
            "empty key segment in 'parallelism.dp.'");
  RefusedAt(Parasim("run " + s + " --set 'parallelism=~'"), "--set parallelism=~:1:19",
            "parallelism: no value given");
  // An unknown key the option made points at the option and the key, not at the file's 1:1.
  RefusedAt(Parasim("run " + s + " --set a.b=1"), "--set a.b=1:1:7", "unknown key 'a'");
  RefusedAt(Parasim("run " + s + " --set training.foo.bar=1"), "--set training.foo.bar=1:1:16",
            "unknown key 'foo'");
  // An empty value is the empty string: `cluster.calibration=` still means no profile.
  CHECK(Parasim("run " + s + " --set cluster.calibration=").exit_code == 0);
}

TEST_CASE("--jobs is capped on every verb that takes it") {
  const std::string s = Runfile(kScenario);
  for (const std::string& cmd :
       {"sweep " + s, "scale " + s, "report " + s, "validate " + s, std::string("fit")}) {
    CAPTURE(cmd);
    const CliResult r = Parasim(cmd + " --jobs 100000");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--jobs") != std::string::npos);
    CHECK(r.err.find("1024") != std::string::npos);
  }
}

TEST_CASE("a write that fails is an error, never 'wrote'; no output onto an input") {
  const std::string s = Runfile(kScenario);
  const std::string sweep = Runfile("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  for (const std::string& cmd :
       {"run " + s + " --svg /dev/full", "report " + s + " --out /dev/full",
        "sweep --jobs 1 " + sweep + " --out /dev/full"}) {
    CAPTURE(cmd);
    const CliResult r = Parasim(cmd);
    CAPTURE(r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("/dev/full:1:1: error: cannot write the file: No space left on device") !=
          std::string::npos);
    CHECK(r.out.find("wrote") == std::string::npos);
  }
  const std::string copy = TempDir() + "/input.yaml";
  Write(copy, Slurp(sweep));
  for (const std::string& cmd : {"sweep " + copy + " --out " + copy,
                                 "report " + copy + " --out " + TempDir() + "/./input.yaml"}) {
    CAPTURE(cmd);
    const CliResult r = Parasim(cmd);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("would overwrite " + copy + ", an input of this command") !=
          std::string::npos);
  }
  CHECK(Slurp(copy) == Slurp(sweep));
  RefusedAt(Parasim("run " + s + " --svg " + TempDir()), TempDir() + ":1:1", "is a directory");
}

TEST_CASE("--resume does not trust a line whose check fails, and says so") {
  const std::string scenario = Runfile("scenarios/gpt3-175b-1024-a100-sweep.yaml");
  const std::string csv = TempDir() + "/tamper.csv";
  const CliResult whole = Parasim("sweep --jobs 1 --out " + csv + " " + scenario);
  REQUIRE(whole.exit_code == 0);
  const std::string clean = Slurp(csv);
  // The best layout's line, its throughput set to 1: the true best would drop out of the top.
  const size_t first = clean.find('\n') + 1;
  const size_t end = clean.find('\n', first);
  std::string line = clean.substr(first, end - first);
  std::vector<size_t> commas;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == ',') commas.push_back(i);
  }
  REQUIRE(commas.size() > 4);
  line = line.substr(0, commas[2] + 1) + "1" + line.substr(commas[3]);
  Write(csv, clean.substr(0, first) + line + clean.substr(end));
  const CliResult resumed = Parasim("sweep --jobs 1 --resume --out " + csv + " " + scenario);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.out == whole.out);  // the same best layout and ranking
  CHECK(resumed.err.find("1 lines refused (their check fails") != std::string::npos);
  CHECK(Slurp(csv) == clean);
}

TEST_CASE("a validation case with an invalid layout fails alone; the others are predicted") {
  const std::string file = TempDir() + "/cases.yaml";
  Write(file,
        "source: test\n"
        "defaults:\n"
        "  cluster: {gpu: a100-sxm4-80gb, nodes: 2, gpus_per_node: 8, intra_node: nvlink3-a100,"
        " inter_node: ib-hdr-200g}\n"
        "  model: gpt3-1.3b\n"
        "  training: {seq_len: 2048, global_batch: 64, micro_batch: 2, precision: bf16}\n"
        "cases:\n"
        "  - name: good\n"
        "    scenario: {parallelism: {tp: 2, pp: 2, dp: 4}}\n"
        "    measured: {step_time: 0.5s}\n"
        "  - name: bad\n"
        "    scenario: {parallelism: {tp: 3, pp: 2, dp: 4}}\n"
        "    measured: {step_time: 0.5s}\n");
  const CliResult r = Parasim("validate --json " + file);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"status\": \"ok\"") != std::string::npos);
  CHECK(r.out.find("\"status\": \"invalid layout: " + file + ":11:") != std::string::npos);
  CHECK(r.out.find("\"failed\": 1") != std::string::npos);
}

// The end of the JSON value that opens at text[at] ('[' or '{'), strings skipped.
size_t ValueEnd(const std::string& text, size_t at) {
  int depth = 0;
  for (size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) i += text[i] == '\\' ? 1 : 0;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string::npos;
}

TEST_CASE("report --from a large results file: bounded, parsed as JSON, rows cut for drawing") {
  // A real sweep's JSON with its ten results repeated 2,000 times: 20,000 rows, tens of MB.
  const CliResult sweep =
      Parasim("sweep --json --jobs 1 " + Runfile("scenarios/gpt3-175b-1024-a100-sweep.yaml"));
  REQUIRE(sweep.exit_code == 0);
  const std::string& j = sweep.out;
  const size_t open = j.find('[', j.find("\"results\":"));
  const size_t close = ValueEnd(j, open);
  REQUIRE(close != std::string::npos);
  const std::string rows = j.substr(open + 1, close - open - 2);
  const std::string path = TempDir() + "/big.json";
  {
    std::ofstream out(path);
    out << j.substr(0, open + 1);
    for (int i = 0; i < 2000; ++i) out << (i ? "," : "") << rows;
    out << j.substr(close - 1);
  }
  const std::string html = TempDir() + "/big.html";
  const CliResult r = Parasim("report --from " + path + " --out " + html);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("the report draws the first 2000 of its 20000 rows") != std::string::npos);
  CHECK(Slurp(html).find("<html") != std::string::npos);
  Write(path, "{\"results\": [1, 2,\n  }");
  RefusedAt(Parasim("report --from " + path), path + ":2:3", "JSON syntax");
}

TEST_CASE("a newcomer's inputs: GPU families, the server's NVLink, catalog sources") {
  const std::string s = Runfile(kScenario);
  const CliResult h100 = Parasim("run " + s + " --set cluster.gpu=h100");
  CHECK(h100.exit_code == 2);
  CHECK(h100.err.find("(did you mean one of: h100-sxm5-80gb, h100-pcie-80gb?)") !=
        std::string::npos);
  // Without intra_node the GPU's server gives it (DGX A100: NVLink3).
  const std::string no_intra = TempDir() + "/no-intra.yaml";
  std::string text = Slurp(s);
  text.erase(text.find("  intra_node: nvlink3-a100\n"), 27);
  Write(no_intra, text);
  const CliResult a = Parasim("run --json " + no_intra);
  const CliResult b = Parasim("run --json " + s);
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);
  const CliResult cat = Parasim("catalog");
  CHECK(cat.out.find("a100-sxm4-80gb: memory: nvidia-smi total for A100 80GB") !=
        std::string::npos);
  CHECK(cat.out.find("nvlink3-a100: bandwidth: NVLink3 on A100") != std::string::npos);
  CHECK(cat.out.find("gpt3-175b: Brown et al. 2020") != std::string::npos);
  CHECK(Parasim("catalog --json").out.find("\"sources\": {") != std::string::npos);
}

TEST_CASE("a step past the replay's range is refused, located at the scenario") {
  // A 100-trillion-parameter model on 8 GPUs at the slowest accepted HBM and peak.
  const std::string f = TempDir() + "/slow.yaml";
  Write(f,
        "cluster:\n"
        "  gpu: {name: slow, memory: 80GiB, sms: 1, hbm_bandwidth: 1GB/s, peak: {bf16: 1TFLOP/s}}\n"
        "  nodes: 1\n  gpus_per_node: 8\n  intra_node: nvlink3-a100\n"
        "model: gpt3-175b\n"
        "training: {seq_len: 2048, global_batch: 4096, micro_batch: 4, precision: bf16}\n"
        "parallelism: {tp: 8, pp: 1, dp: 1}\n");
  RefusedAt(Parasim("run " + f), f + ":1:1", "the step runs past 1e+06 s (11.6 days)");
}

TEST_CASE("the goodput model ends at any scale: 1e11 tokens on 131,040 GPUs, 1.5e13 on 1M") {
  // Issue 62: both spun for more than 240 s in the Monte Carlo of the run.
  struct Case {
    int64_t nodes;
    const char* tokens;
    int pp;
  };
  for (const Case& c : {Case{16380, "1e11", 4}, Case{131076, "1.5e13", 1}}) {
    CAPTURE(c.nodes);
    const std::string f = TempDir() + "/goodput.yaml";
    Write(f, "cluster: {gpu: h100-sxm5-80gb, nodes: " + std::to_string(c.nodes) +
                 ", gpus_per_node: 8, intra_node: nvlink4-h100, inter_node: ib-ndr-400g}\n"
                 "model: llama3-405b\n"
                 "training: {seq_len: 8192, global_batch: " +
                 std::to_string(c.nodes) + ", micro_batch: 1, recompute: full, tokens: " +
                 c.tokens + "}\n" + "parallelism: {tp: 8, pp: " + std::to_string(c.pp) +
                 ", dp: auto, zero: " + (c.pp == 1 ? "3" : "1") + "}\n");
    const CliResult r = Parasim("run --json " + f);
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("\"time_to_train_s\": ") != std::string::npos);
    CHECK(r.out.find("\"goodput\": ") != std::string::npos);
  }
}

TEST_CASE("an MTBF past 106 days reads the same in the text as in the JSON") {
  // Issue 62: 'MTBF inf' in the text where the JSON said 128 days. Eight GPUs failing once in
  // 1024 days each: the cluster's MTBF is 128 days.
  const std::string s = Runfile(kScenario);
  const std::string set = " --set training.tokens=1e9 --set reliability.gpu=1024d";
  const CliResult text = Parasim("run " + s + set);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("MTBF 128.0 days") != std::string::npos);
  CHECK(text.out.find("inf") == std::string::npos);
  const CliResult json = Parasim("run --json " + s + set);
  CHECK(json.out.find("\"mtbf_s\": 110592") != std::string::npos);
}

}  // namespace
}  // namespace parasim
