#include "strategies/sweep_results.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "sim/io.h"

namespace parasim {

uint64_t Fnv1a(std::string_view text, uint64_t h) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

// The check of a line's text before its check column.
uint64_t LineCheck(std::string_view body, uint64_t fingerprint) {
  const std::string salt = fmt::format("{:016x},", fingerprint);
  return Fnv1a(body, Fnv1a(salt));
}

}  // namespace

std::string CsvLine(const SweepEntry& e, uint64_t fingerprint) {
  std::string reason = e.reason;
  std::replace(reason.begin(), reason.end(), '"', '\'');
  // fmt::format, not format_to an iterator: clang builds (tools/fuzz.sh) link the system's
  // GCC-built libfmt, whose vformat_to<char> they mangle differently.
  // The layout quoted (RFC 4180: quotes doubled): a co-design label may hold commas.
  std::string key;
  for (char c : e.key) key += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  std::string line = fmt::format("\"{}\",{}", key, e.fits ? 1 : 0);
  ForEachFigure([&](double v) { line += fmt::format(",{:.17g}", v); }, e);
  line += fmt::format(",\"{}\"", reason);
  line += fmt::format(",{:016x}\n", LineCheck(line, fingerprint));
  return line;
}

bool ParseCsv(const std::string& full, SweepEntry* e, uint64_t fingerprint) {
  // The check: the last field, of the line before it.
  const size_t comma = full.rfind(',');
  if (comma == std::string::npos || full.size() - comma - 1 != 16) return false;
  const std::string line = full.substr(0, comma);
  if (fmt::format("{:016x}", LineCheck(line, fingerprint)) != full.substr(comma + 1)) return false;
  constexpr int kFields = 2 + kNumFigures;  // before the note
  std::vector<std::string> f;
  // The quoted layout first.
  if (line.empty() || line[0] != '"') return false;
  std::string key;
  size_t pos = 1;
  for (;; ++pos) {
    if (pos >= line.size()) return false;
    if (line[pos] != '"') {
      key += line[pos];
    } else if (pos + 1 < line.size() && line[pos + 1] == '"') {
      key += '"';
      ++pos;
    } else {
      break;
    }
  }
  if (pos + 1 >= line.size() || line[pos + 1] != ',') return false;
  f.push_back(key);
  pos += 2;
  for (int i = 1; i < kFields; ++i) {
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

Resumed ParseResume(const std::string& text, uint64_t fingerprint) {
  Resumed r;
  std::istringstream in(text);
  std::string line;
  const std::string header(kCsvHeader, std::strlen(kCsvHeader) - 1);
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a last line without its newline was torn by a kill
    if (line == header) continue;
    SweepEntry e;
    if (!ParseCsv(line, &e, fingerprint)) {
      ++r.refused;
    } else if (e.reason.rfind(kPrunedNote, 0) != 0) {
      r.done[e.key] = e;
    }
  }
  return r;
}

Status WriteCsv(const std::string& path, const std::vector<SweepEntry>& ranked,
                const std::vector<SweepEntry>& entries, uint64_t fingerprint) {
  std::string text = kCsvHeader;
  for (const auto& e : ranked) text += CsvLine(e, fingerprint);
  for (const auto& e : entries) {
    if (!e.fits) text += CsvLine(e, fingerprint);
  }
  return WriteFileAtomic(path, text);
}

Status ResultsFile::Open(const std::string& path, bool resume, std::string* earlier,
                         uint64_t fingerprint) {
  fingerprint_ = fingerprint;
  if (resume && std::filesystem::exists(path)) {
    // Bounded, and only a regular file (a FIFO would block, /dev/zero never end).
    PARASIM_ASSIGN_OR_RETURN(*earlier, ReadFile(path, kMaxResultsFileBytes));
    AllowRewrite(path);  // the results this run resumes from, and appends to
  }
  // Never onto another input (the scenario's calibration profile, say): opening truncates it.
  PARASIM_RETURN_IF_ERROR(RefuseRewritingInput(path));
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
  const std::string line = CsvLine(e, fingerprint_);
  std::lock_guard<std::mutex> lock(mu_);
  csv_ << line;
  csv_.flush();
}

}  // namespace parasim
