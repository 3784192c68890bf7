// A sweep's results file (CSV, one line per layout) and resuming from it. While a sweep runs,
// each layout's line is appended as it is decided (ResultsFile), so that a killed run leaves
// what it found; a resumed run takes those results back (ParseResume) instead of replaying
// them; at the end the file is rewritten, the ranked layouts first (WriteCsv).
//
//   layout,fits,step_time_s,tokens_per_s,...,compute_s,note
//   tp8 pp8 dp16 ... full,1,12.3,...,4.5,""
//
//   std::unordered_map<std::string, SweepEntry> done = ParseResume(text);  // by layout key
#pragma once

#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/status.h"
#include "strategies/sweep_entry.h"

namespace parasim {

// The results file's first line: the key, whether it fits, the figures (ForEachFigure), the note.
inline constexpr const char* kCsvHeader =
    "layout,fits,step_time_s,tokens_per_s,mfu,bubble_fraction,exposed_tp_s,exposed_cp_s,"
    "exposed_ep_s,exposed_pp_s,exposed_dp_s,peak_memory_bytes,compute_s,note\n";

// One entry's line, with its newline (double quotes in the note become single ones).
std::string CsvLine(const SweepEntry& e);
// Parses one line written by CsvLine (without its newline) into the key, fits, the figures and
// the note of `e`; false for a torn or foreign line.
bool ParseCsv(const std::string& line, SweepEntry* e);
// Earlier results (--resume): every whole line of the file's text, by layout key. Pruned layouts
// are left out, to be decided again (the decision depends on what else was replayed); a last
// line without its newline was torn by a kill and is left out too.
std::unordered_map<std::string, SweepEntry> ParseResume(const std::string& text);

// The final file: the header, the ranked layouts in order, then every other layout of
// `entries` (those that do not fit), rewritten atomically.
Status WriteCsv(const std::string& path, const std::vector<SweepEntry>& ranked,
                const std::vector<SweepEntry>& entries);

// The results file while the sweep runs: lines appended as layouts are decided, from any thread.
class ResultsFile {
 public:
  // Opens `path` for writing, truncated, or appended to when `resume` (then `earlier` gets the
  // text an earlier run left). An error, located at the file, when it cannot be written.
  Status Open(const std::string& path, bool resume, std::string* earlier);
  // Starts the file with the header, unless it is resumed with earlier results in it.
  void Begin(bool resume, bool has_earlier);
  // Appends an entry's line (nothing when the file is not open); thread-safe.
  void Write(const SweepEntry& e);

 private:
  std::ofstream csv_;
  std::mutex mu_;  // guards csv_
};

}  // namespace parasim
