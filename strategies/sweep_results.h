// A sweep's results file (CSV, one line per layout) and resuming from it. While a sweep runs,
// each layout's line is appended as it is decided (ResultsFile), so that a killed run leaves
// what it found; a resumed run takes those results back (ParseResume) instead of replaying
// them; at the end the file is rewritten, the ranked layouts first (WriteCsv).
//
//   layout,fits,step_time_s,tokens_per_s,...,compute_s,note,check
//   tp8 pp8 dp16 ... full,1,12.3,...,4.5,"",9f3a61c2d4e5b708
//
//   Resumed r = ParseResume(text, fingerprint);  // r.done by layout key; r.refused lines
//
// Each line ends with a check: a 64-bit FNV-1a hash of the line and of the scenario's
// fingerprint (the sweep's SweepOptions::fingerprint, a hash of its text). A resumed run takes
// only lines whose check holds, so a line edited by hand, or written for another scenario, is
// decided again rather than trusted. It guards against mistakes, not against someone who
// recomputes the hash.
#pragma once

#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/status.h"
#include "strategies/sweep_entry.h"

namespace parasim {

// The results file's first line: the key, whether it fits, the figures (ForEachFigure), the note.
inline constexpr const char* kCsvHeader =
    "layout,fits,step_time_s,tokens_per_s,mfu,bubble_fraction,exposed_tp_s,exposed_cp_s,"
    "exposed_ep_s,exposed_pp_s,exposed_dp_s,peak_memory_bytes,compute_s,note,check\n";

// The most a results file may be when resumed: a line is about 200 bytes, so over a million
// layouts.
inline constexpr int64_t kMaxResultsFileBytes = int64_t{256} << 20;

// 64-bit FNV-1a of `text`, continuing from `h` (Fowler, Noll, Vo; offset basis and prime from
// the reference, http://www.isthe.com/chongo/tech/comp/fnv/).
uint64_t Fnv1a(std::string_view text, uint64_t h = 0xcbf29ce484222325ull);

// One entry's line, with its newline (double quotes in the note become single ones), its check
// made with the scenario's `fingerprint`.
std::string CsvLine(const SweepEntry& e, uint64_t fingerprint = 0);
// Parses one line written by CsvLine (without its newline) into the key, fits, the figures and
// the note of `e`; false for a torn or foreign line, or one whose check fails for `fingerprint`.
bool ParseCsv(const std::string& line, SweepEntry* e, uint64_t fingerprint = 0);
// Earlier results (--resume): every whole line of the file's text whose check holds, by layout
// key; `refused` counts the whole lines, the header aside, that fail (edited, foreign, or of
// another scenario). Pruned layouts are left out, to be decided again (the decision depends on
// what else was replayed); a last line without its newline was torn by a kill and is left out
// too.
struct Resumed {
  std::unordered_map<std::string, SweepEntry> done;
  int64_t refused = 0;
};
Resumed ParseResume(const std::string& text, uint64_t fingerprint = 0);

// The final file: the header, the ranked layouts in order, then every other layout of
// `entries` (those that do not fit), rewritten atomically.
Status WriteCsv(const std::string& path, const std::vector<SweepEntry>& ranked,
                const std::vector<SweepEntry>& entries, uint64_t fingerprint = 0);

// The results file while the sweep runs: lines appended as layouts are decided, from any thread.
class ResultsFile {
 public:
  // Opens `path` for writing, truncated, or appended to when `resume` (then `earlier` gets the
  // text an earlier run left). An error, located at the file, when it cannot be written.
  // The earlier file is read within kMaxResultsFileBytes; its lines and the new ones carry
  // checks made with `fingerprint`.
  Status Open(const std::string& path, bool resume, std::string* earlier, uint64_t fingerprint = 0);
  // Starts the file with the header, unless it is resumed with earlier results in it.
  void Begin(bool resume, bool has_earlier);
  // Appends an entry's line (nothing when the file is not open); thread-safe.
  void Write(const SweepEntry& e);

 private:
  std::ofstream csv_;
  uint64_t fingerprint_ = 0;
  std::mutex mu_;  // guards csv_
};

}  // namespace parasim
