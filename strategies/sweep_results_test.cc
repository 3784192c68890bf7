// Results file tests: a line round-trips every figure exactly, a torn last line and pruned
// layouts are not resumed, the final file lists the ranked layouts first, and the live file is
// appended to when resumed.
#include "strategies/sweep_results.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace parasim {
namespace {

SweepEntry Entry(const std::string& key, bool fits, const std::string& reason = "") {
  SweepEntry e;
  e.key = key;
  e.fits = fits;
  e.reason = reason;
  double x = 0.1;
  ForEachFigure(
      [&](double& f) {
        f = x;
        x = x * 3.7 + 1e-9;  // figures that need all 17 digits
      },
      e);
  return e;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_CASE("a line round-trips the key, fits, every figure bit for bit, and the note") {
  const SweepEntry e =
      Entry("tp8 pp8 dp16 cp1 zero1 1f1b mb1 gb1536 full", true, "replay peaks at \"81.2\" GiB");
  const std::string line = CsvLine(e);
  REQUIRE(line.back() == '\n');
  CHECK(line.find("\"replay peaks at '81.2' GiB\"") != std::string::npos);
  SweepEntry back;
  REQUIRE(ParseCsv(line.substr(0, line.size() - 1), &back));
  CHECK(back.key == e.key);
  CHECK(back.fits);
  int exact = 0;
  ForEachFigure([&](double a, double b) { exact += a == b ? 1 : 0; }, e, back);
  CHECK(exact == kNumFigures);
  CHECK(back.reason == "replay peaks at '81.2' GiB");
  // The header names as many columns as a line has: the figures, the note and the check.
  const std::string header = kCsvHeader;
  CHECK(std::count(header.begin(), header.end(), ',') == 3 + kNumFigures);
  // A co-design layout's label may hold commas and quotes: quoted, it is one column, and reads
  // back whole (unquoted, a GPU named "a,b" gave 16 fields against 15 headers).
  const SweepEntry odd = Entry("gpu.name=a,b gpu.x=\"q\" | tp8 pp1", true);
  const std::string oline = CsvLine(odd);
  CHECK(oline.rfind("\"gpu.name=a,b gpu.x=\"\"q\"\" | tp8 pp1\",1,", 0) == 0);
  SweepEntry oback;
  REQUIRE(ParseCsv(oline.substr(0, oline.size() - 1), &oback));
  CHECK(oback.key == odd.key);
}

TEST_CASE("torn, foreign and unquoted lines are refused") {
  const std::string line = CsvLine(Entry("tp1", true));
  SweepEntry e;
  CHECK_FALSE(ParseCsv(line.substr(0, 25), &e));                      // torn in the figures
  CHECK_FALSE(ParseCsv(line.substr(0, line.size() - 2), &e));         // torn in the note
  CHECK_FALSE(ParseCsv(std::string(kCsvHeader).substr(0, 200), &e));  // the header
  CHECK_FALSE(ParseCsv("tp1,1,x,2,3,4,5,6,7,8,9,10,11,\"\"", &e));    // not a number
}

TEST_CASE("resume: whole lines by key, not the torn last one, not the pruned ones") {
  std::string text = kCsvHeader;
  text += CsvLine(Entry("a", true));
  text += CsvLine(Entry("b", false, "needs 90.0 GiB of 80.0 GiB"));
  text += CsvLine(Entry("c", false, std::string(kPrunedNote) + " its step is at least 3 s"));
  const std::string last = CsvLine(Entry("d", true));
  text += last.substr(0, last.size() - 1);  // killed before its newline
  const auto done = ParseResume(text).done;
  CHECK(done.size() == 2);
  REQUIRE(done.count("a") == 1);
  CHECK(done.at("a").fits);
  CHECK(done.at("a").step_time_s == Entry("a", true).step_time_s);
  REQUIRE(done.count("b") == 1);
  CHECK(done.at("b").reason == "needs 90.0 GiB of 80.0 GiB");
  CHECK(done.count("c") == 0);  // decided again
  CHECK(done.count("d") == 0);  // torn
  CHECK(ParseResume(text + "\n").done.count("d") == 1);
  CHECK(ParseResume(text).refused == 0);
}

TEST_CASE("resume: a line edited by hand, or of another scenario, fails its check") {
  const uint64_t scenario = Fnv1a("cluster: ...");
  const std::string good = CsvLine(Entry("a", true), scenario);
  SweepEntry e;
  CHECK(ParseCsv(good.substr(0, good.size() - 1), &e, scenario));
  CHECK_FALSE(ParseCsv(good.substr(0, good.size() - 1), &e, scenario + 1));  // another scenario
  // The throughput (the fourth field) set to 1: the best layout would drop out of the ranking.
  std::string edited = good;
  size_t at = 0;
  for (int i = 0; i < 3; ++i) at = edited.find(',', at) + 1;
  edited.replace(at, edited.find(',', at) - at, "1");
  CHECK_FALSE(ParseCsv(edited.substr(0, edited.size() - 1), &e, scenario));
  const Resumed r = ParseResume(std::string(kCsvHeader) + good + edited, scenario);
  CHECK(r.done.size() == 1);
  CHECK(r.refused == 1);
  // FNV-1a's published test vectors (64-bit): "" and "a".
  CHECK(Fnv1a("") == 0xcbf29ce484222325ull);
  CHECK(Fnv1a("a") == 0xaf63dc4c8601ec8cull);
}

TEST_CASE("the final file: header, the ranked layouts in order, then those that do not fit") {
  const std::vector<SweepEntry> entries = {Entry("a", true), Entry("b", false, "over"),
                                           Entry("c", true)};
  const std::vector<SweepEntry> ranked = {entries[2], entries[0]};
  const std::string path = TempPath("final.csv");
  REQUIRE(WriteCsv(path, ranked, entries).ok());
  CHECK(Slurp(path) ==
        std::string(kCsvHeader) + CsvLine(entries[2]) + CsvLine(entries[0]) + CsvLine(entries[1]));
}

TEST_CASE("the live file: a header once, lines appended, kept when resumed") {
  const std::string path = TempPath("live.csv");
  {
    ResultsFile f;
    std::string earlier;
    REQUIRE(f.Open(path, false, &earlier).ok());
    f.Begin(false, false);
    f.Write(Entry("a", true));
  }
  const std::string first = Slurp(path);
  CHECK(first == std::string(kCsvHeader) + CsvLine(Entry("a", true)));
  {
    ResultsFile f;
    std::string earlier;
    REQUIRE(f.Open(path, true, &earlier).ok());
    CHECK(earlier == first);
    f.Begin(true, !ParseResume(earlier).done.empty());  // no second header
    f.Write(Entry("b", true));
  }
  CHECK(Slurp(path) == first + CsvLine(Entry("b", true)));
  ResultsFile nowhere;
  std::string unused;
  const Status st = nowhere.Open(TempPath("no/such/dir/x.csv"), false, &unused);
  CHECK(st.message().find("cannot write the results file") != std::string::npos);
  nowhere.Write(Entry("c", true));  // not open: nothing
}

}  // namespace
}  // namespace parasim
