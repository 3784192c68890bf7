// Pictures: `run --svg` writes well-formed SVG; `report` writes a self-contained HTML file whose
// tags balance, that references nothing outside itself, and that headless Chromium renders to a
// non-blank page without console errors.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "tests/cli_runner.h"

namespace parasim {
namespace {

using testing::Runfile;
using testing::RunParasim;
using testing::Slurp;

// Checks that elements nest and close (XML rules; HTML void elements allowed when `html`), that
// attribute values are quoted and that '&' starts an entity. Returns "" or the first problem.
std::string WellFormed(const std::string& doc, bool html) {
  static const std::set<std::string> kVoid = {"meta", "br", "img", "hr", "link", "input"};
  std::vector<std::string> stack;
  size_t i = 0;
  while (i < doc.size()) {
    if (doc[i] == '&') {
      size_t semi = doc.find(';', i);
      if (semi == std::string::npos || semi - i > 8) return "bare & at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (doc[i] != '<') {
      ++i;
      continue;
    }
    if (doc.compare(i, 2, "<!") == 0 || doc.compare(i, 2, "<?") == 0) {
      i = doc.find('>', i) + 1;
      continue;
    }
    const size_t end = doc.find('>', i);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(i);
    std::string tag = doc.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) {
        return "</" + name + "> closes <" + (stack.empty() ? "" : stack.back()) + ">";
      }
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    const std::string name = tag.substr(0, tag.find_first_of(" /\n"));
    // Attributes: name="value" pairs.
    size_t q = 0;
    int quotes = 0;
    while ((q = tag.find('"', q)) != std::string::npos) {
      ++quotes;
      ++q;
    }
    if (quotes % 2 != 0) return "unbalanced quotes in <" + name + ">";
    if (!self_closing && !(html && kVoid.count(name))) stack.push_back(name);
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  return "";
}

TEST_CASE("run --svg writes a well-formed pipeline timeline") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  for (const char* f : {"scenarios/gpt3-175b-1024-a100.yaml", "scenarios/llama3-405b-16k-h100.yaml",
                        "scenarios/llama2-7b-ddp-8-a100.yaml"}) {
    CAPTURE(f);
    const std::string svg = dir + "/t.svg";
    auto r = RunParasim("run --svg " + svg + " " + Runfile(f));
    REQUIRE(r.exit_code == 0);
    const std::string text = Slurp(svg);
    CHECK(text.rfind("<svg", 0) == 0);
    CHECK(WellFormed(text, false) == "");
    CHECK(text.find("<title>stage 0") != std::string::npos);  // hover texts
    CHECK(text.size() < 2'000'000);  // aggregated per pixel column, not one rect per task
  }
  CHECK(RunParasim("run --svg /no/such/dir/t.svg " + Runfile("scenarios/llama2-7b-ddp-8-a100.yaml"))
            .exit_code == 2);
}

TEST_CASE("report writes one self-contained HTML file; headless Chromium renders it") {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string html = dir + "/report.html";
  auto r = RunParasim("report --jobs 2 --out " + html + " " +
                      Runfile("scenarios/gpt3-175b-1024-a100.yaml"));
  REQUIRE(r.exit_code == 0);
  const std::string text = Slurp(html);
  CHECK(WellFormed(text, true) == "");
  // Charts read without hovering: time axes start at "0 s", bars carry their values.
  for (const char* part : {"Pipeline timeline", "Memory per GPU over", "Where the step time goes",
                           "stage 7", "step time", ">0 s</text>", ">10 s</text>",
                           "compute (busiest stage) 2", "pointer-events=\"none\">"}) {
    CAPTURE(part);
    CHECK(text.find(part) != std::string::npos);
  }
  // Self-contained: no scripts, no external resources.
  for (const char* bad : {"<script", "http://", "https://", "src="}) {
    CAPTURE(bad);
    const auto at = text.find(bad);
    // The only URL allowed is the SVG namespace.
    if (at != std::string::npos) {
      CHECK(text.compare(at, 26, "http://www.w3.org/2000/svg") == 0);
    }
  }
  // report --vs adds the what-if table.
  const std::string vs_html = dir + "/vs.html";
  auto vs = RunParasim(
      "report --out " + vs_html + " " + Runfile("scenarios/gpt3-175b-1024-a100.yaml") + " --vs " +
      Runfile("scenarios/gpt3-175b-1024-a100.yaml") + " --set-b training.recompute=selective");
  REQUIRE(vs.exit_code == 0);
  const std::string vs_text = Slurp(vs_html);
  CHECK(WellFormed(vs_text, true) == "");
  CHECK(vs_text.find("What if: A vs B") != std::string::npos);
  CHECK(vs_text.find("A is behind B") != std::string::npos);
  // A scenario that trains a number of tokens gets the goodput panel: one simulated run with
  // its failures.
  const std::string gp_html = dir + "/goodput.html";
  auto gp =
      RunParasim("report --out " + gp_html + " " + Runfile("scenarios/gpt3-175b-1024-a100.yaml") +
                 " --set training.tokens=3e11 --set reliability.gpu=0.01");
  REQUIRE(gp.exit_code == 0);
  const std::string gp_text = Slurp(gp_html);
  CHECK(WellFormed(gp_text, true) == "");
  for (const char* part :
       {"<h2>Goodput: ", "unexpected interruptions", "failure at day", "the training time kept"}) {
    CAPTURE(part);
    CHECK(gp_text.find(part) != std::string::npos);
  }
  // A scenario with a sweep block gets the scatter and the top table.
  const std::string sweep_html = dir + "/sweep.html";
  auto s = RunParasim("report --jobs 2 --out " + sweep_html + " " +
                      Runfile("scenarios/turing-530b-5128-a100-sweep.yaml"));
  REQUIRE(s.exit_code == 0);
  const std::string sweep_text = Slurp(sweep_html);
  CHECK(WellFormed(sweep_text, true) == "");
  CHECK(sweep_text.find("Pareto front") != std::string::npos);
  // The scatter's axes are ticked and fitted to the points (with room around them, not from
  // 0): memory in GiB along x, tokens/s (k) up y.
  CHECK(sweep_text.find("0 GiB</text>") != std::string::npos);
  CHECK(sweep_text.find("text-anchor=\"end\">0</text>") == std::string::npos);
  CHECK(sweep_text.find("k</text>") != std::string::npos);

  // From a finished scale or sweep run's JSON.
  const std::string seven = Runfile("scenarios/llama2-7b-ddp-8-a100.yaml");
  auto sc = RunParasim("scale --json --jobs 2 --gpus 2,4,8 " + seven);
  REQUIRE(sc.exit_code == 0);
  std::ofstream(dir + "/scale.json") << sc.out;
  auto from = RunParasim("report --from " + dir + "/scale.json --out " + dir + "/scale.html");
  REQUIRE(from.exit_code == 0);
  const std::string scale_text = Slurp(dir + "/scale.html");
  CHECK(WellFormed(scale_text, true) == "");
  CHECK(scale_text.find("Amdahl fit") != std::string::npos);
  CHECK(scale_text.find("ideal") != std::string::npos);
  auto sw =
      RunParasim("sweep --json --jobs 2 " + Runfile("scenarios/turing-530b-5128-a100-sweep.yaml"));
  REQUIRE(sw.exit_code == 0);
  std::ofstream(dir + "/sweep.json") << sw.out;
  REQUIRE(
      RunParasim("report --from " + dir + "/sweep.json --out " + dir + "/sweep2.html").exit_code ==
      0);
  CHECK(WellFormed(Slurp(dir + "/sweep2.html"), true) == "");
  // A results file with a row missing its step time, or a speedup parasim never writes, is an
  // error at its place (they drew 0.000 s and a 309-digit number); a scenario beside --from is
  // refused rather than dropped.
  std::string missing = sc.out;
  missing.replace(missing.find("\"step_time_s\""), 13, "\"step_time_x\"");
  std::ofstream(dir + "/missing.json") << missing;
  auto m = RunParasim("report --from " + dir + "/missing.json --out " + dir + "/m.html");
  CHECK(m.exit_code == 2);
  CHECK(m.err.find("this row has no number 'step_time_s'") != std::string::npos);
  std::string huge = sc.out;
  const size_t sp = huge.find("\"speedup\": ");
  huge.replace(sp, huge.find(',', sp) - sp, "\"speedup\": 1e308");
  std::ofstream(dir + "/huge.json") << huge;
  auto hg = RunParasim("report --from " + dir + "/huge.json --out " + dir + "/h.html");
  CHECK(hg.exit_code == 2);
  CHECK(hg.err.find("'speedup' is 1e+308") != std::string::npos);
  CHECK(!std::filesystem::exists(dir + "/h.html"));
  // A point that lacks a key read as yaml-cpp's "invalid node; first invalid key" (a bug hunt).
  std::ofstream(dir + "/bare.json") << R"({"points":[{"gpus":-1,"step_time_s":1e308}]})";
  auto bare = RunParasim("report --from " + dir + "/bare.json --out " + dir + "/bare.html");
  CHECK(bare.exit_code == 2);
  CAPTURE(bare.err);
  CHECK(bare.err.find("invalid node") == std::string::npos);
  auto both =
      RunParasim("report " + seven + " --from " + dir + "/scale.json --out " + dir + "/both.html");
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("a scenario file or --from RESULTS.json, not both") != std::string::npos);
  // Flags a report cannot apply are refused, not dropped (a bug hunt, 2026-11-30): --set and
  // the what-if flags beside --from, the what-if flags on a serving scenario; --out '' (it wrote
  // report.html in the working folder).
  for (const std::string& extra : {std::string(" --set parallelism.tp=4"),
                                   std::string(" --vs ") + seven, std::string(" --robust")}) {
    CAPTURE(extra);
    auto bad =
        RunParasim("report --from " + dir + "/scale.json --out " + dir + "/bad.html" + extra);
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("does not apply to a report drawn from a results file") !=
          std::string::npos);
  }
  auto serve = RunParasim("report " + Runfile("scenarios/llama3-70b-serve-8-h100.yaml") +
                          " --out " + dir + "/serve.html --set-a parallelism.tp=8");
  CHECK(serve.exit_code == 2);
  CHECK(serve.err.find("--set-a:1:1: error: --set-a does not apply to a serving scenario") == 0);
  CHECK(!std::filesystem::exists(dir + "/bad.html"));
  CHECK(!std::filesystem::exists(dir + "/serve.html"));
  auto nothing = RunParasim("report --out '' " + seven);
  CHECK(nothing.exit_code == 2);
  CHECK(nothing.err.find("--out: expected a file name, got nothing") != std::string::npos);
  // A sweep none of whose layouts fits says so in its section (it went without a word).
  auto none =
      RunParasim("report --jobs 2 --set cluster.gpu.memory=8GiB --out " + dir + "/none.html " +
                 Runfile("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml"));
  REQUIRE(none.exit_code == 0);
  CHECK(Slurp(dir + "/none.html").find("no layout of the sweep fits in memory") !=
        std::string::npos);
  // report --robust: how far the sweep's answer holds, the same from a sweep --robust --json.
  const std::string eth = Runfile("scenarios/llama3-70b-64-h100-ethernet-sweep.yaml");
  REQUIRE(RunParasim("report --robust --jobs 2 --out " + dir + "/robust.html " + eth).exit_code ==
          0);
  const std::string robust_text = Slurp(dir + "/robust.html");
  CHECK(WellFormed(robust_text, true) == "");
  const size_t table = robust_text.find(
      "<h2>How far the answer holds: #1 stays first, or within "
      "2%, under 11 of 12 swings</h2>");
  REQUIRE(table != std::string::npos);
  CHECK(robust_text.find("#2 TP4+SP PP8 DP1 CP2 int-v5 Z1 mb1 gb64 wins") != std::string::npos);
  auto rj = RunParasim("sweep --robust --json --jobs 2 " + eth);
  REQUIRE(rj.exit_code == 0);
  std::ofstream(dir + "/robust.json") << rj.out;
  REQUIRE(RunParasim("report --from " + dir + "/robust.json --out " + dir + "/robust2.html")
              .exit_code == 0);
  const std::string robust2 = Slurp(dir + "/robust2.html");
  CHECK(WellFormed(robust2, true) == "");
  const size_t table2 = robust2.find("<h2>How far the answer holds");
  REQUIRE(table2 != std::string::npos);
  const size_t end = robust_text.find("</table>", table), end2 = robust2.find("</table>", table2);
  CHECK(robust_text.substr(table, end - table) == robust2.substr(table2, end2 - table2));
  CHECK(Slurp(dir + "/sweep2.html").find("How far the answer holds") == std::string::npos);
  std::ofstream(dir + "/other.json") << "{\"hello\": 1}\n";
  CHECK(RunParasim("report --from " + dir + "/other.json").exit_code == 2);

  // Render in headless Chromium (tools/bazel test installs Debian's chromium when missing).
  const char* chromium = "/usr/bin/chromium";
  REQUIRE_MESSAGE(std::filesystem::exists(chromium),
                  "headless Chromium is needed: `tools/bazel test` installs Debian's chromium");
  const std::string png = dir + "/report.png";
  const std::string log = dir + "/chromium.log";
  const std::string cmd =
      std::string(chromium) +
      " --headless --no-sandbox --disable-gpu --disable-background-networking --disable-quic "
      "--no-first-run --disable-component-update --disable-sync --user-data-dir=" +
      dir +
      "/chromium-profile --enable-logging=stderr --v=0 --window-size=1300,2400 "
      "--screenshot=" +
      png + " file://" + html + " >" + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  CHECK(rc == 0);
  const std::string image = Slurp(png);
  REQUIRE(image.size() > 8);
  CHECK(image.compare(1, 3, "PNG") == 0);
  // A blank page compresses to a few kilobytes; the timeline and charts do not.
  CHECK(image.size() > 30'000);
  const std::string console = Slurp(log);
  CHECK(console.find("Uncaught") == std::string::npos);
  CHECK(console.find(":ERROR:CONSOLE") == std::string::npos);
}

}  // namespace
}  // namespace parasim
