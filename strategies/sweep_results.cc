#include "strategies/sweep_results.h"

#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <sstream>

#include "sim/io.h"

namespace parasim {

std::string CsvLine(const SweepEntry& e) {
  std::string reason = e.reason;
  std::replace(reason.begin(), reason.end(), '"', '\'');
  // fmt::format, not format_to an iterator: clang builds (tools/fuzz.sh) link the system's
  // GCC-built libfmt, whose vformat_to<char> they mangle differently.
  std::string line = fmt::format("{},{}", e.key, e.fits ? 1 : 0);
  ForEachFigure([&](double v) { line += fmt::format(",{:.17g}", v); }, e);
  line += fmt::format(",\"{}\"\n", reason);
  return line;
}

bool ParseCsv(const std::string& line, SweepEntry* e) {
  constexpr int kFields = 2 + kNumFigures;  // before the note
  std::vector<std::string> f;
  size_t pos = 0;
  for (int i = 0; i < kFields; ++i) {
    size_t c = line.find(',', pos);
    if (c == std::string::npos) return false;
    f.push_back(line.substr(pos, c - pos));
    pos = c + 1;
  }
  std::string rest = line.substr(pos);
  if (rest.size() < 2 || rest.front() != '"' || rest.back() != '"') return false;
  try {
    e->key = f[0];
    e->fits = f[1] == "1";
    size_t i = 2;
    ForEachFigure([&](double& v) { v = std::stod(f[i++]); }, *e);
  } catch (const std::exception&) {
    return false;
  }
  e->reason = rest.substr(1, rest.size() - 2);
  return true;
}

std::unordered_map<std::string, SweepEntry> ParseResume(const std::string& text) {
  std::unordered_map<std::string, SweepEntry> done;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a last line without its newline was torn by a kill
    SweepEntry e;
    if (ParseCsv(line, &e) && e.reason.rfind(kPrunedNote, 0) != 0) done[e.key] = e;
  }
  return done;
}

Status WriteCsv(const std::string& path, const std::vector<SweepEntry>& ranked,
                const std::vector<SweepEntry>& entries) {
  std::string text = kCsvHeader;
  for (const auto& e : ranked) text += CsvLine(e);
  for (const auto& e : entries) {
    if (!e.fits) text += CsvLine(e);
  }
  return WriteFileAtomic(path, text);
}

Status ResultsFile::Open(const std::string& path, bool resume, std::string* earlier) {
  if (resume) {
    std::ifstream in(path);
    earlier->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  csv_.open(path, resume ? std::ios::app : std::ios::trunc);
  if (!csv_) {
    return InvalidArgument(fmt::format("{}:1:1: error: cannot write the results file", path));
  }
  return Status::Ok();
}

void ResultsFile::Begin(bool resume, bool has_earlier) {
  if (csv_.is_open() && (!resume || !has_earlier)) {
    csv_ << kCsvHeader;
    csv_.flush();
  }
}

void ResultsFile::Write(const SweepEntry& e) {
  if (!csv_.is_open()) return;
  const std::string line = CsvLine(e);
  std::lock_guard<std::mutex> lock(mu_);
  csv_ << line;
  csv_.flush();
}

}  // namespace parasim
