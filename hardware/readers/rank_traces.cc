#include "hardware/readers/rank_traces.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

namespace parasim {

int64_t RankFromFileName(const std::string& file) {
  std::string base = std::filesystem::path(file).filename().string();
  for (char& c : base) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t at = base.rfind("rank");
  if (at == std::string::npos) return -1;
  size_t i = at + 4;
  if (i < base.size() && (base[i] == '-' || base[i] == '_')) ++i;
  int64_t rank = -1;
  while (i < base.size() && std::isdigit(static_cast<unsigned char>(base[i]))) {
    rank = (rank < 0 ? 0 : rank * 10) + (base[i++] - '0');
    if (rank > (int64_t{1} << 40)) return -1;
  }
  return rank;
}

namespace {

bool IsTraceFile(const std::filesystem::directory_entry& e) {
  const std::string name = e.path().filename().string();
  return e.is_regular_file() && (name.ends_with(".json") || name.ends_with(".json.gz"));
}

StatusOr<RankTrace> ReadOne(const std::string& path, const KernelClassTable& table,
                            const StepChoice& choice, const JsonTraceOptions& options) {
  PARASIM_ASSIGN_OR_RETURN(ProfilerTrace t, ReadJsonTrace(path, options));
  RankTrace r;
  r.file = path;
  if (t.distributed && t.distributed->rank >= 0) {
    r.rank = t.distributed->rank;
    r.world_size = t.distributed->world_size;
  } else {
    r.rank = RankFromFileName(path);
  }
  if (r.rank < 0) {
    return InvalidArgument(InputError(path, 1, 1,
                                      "the trace does not say its rank (no distributedInfo.rank, "
                                      "no rank-N in the file name); name it rank-N.json"));
  }
  if (const TraceDevice* d = t.Device(t.MainDevice())) r.gpu_name = d->name;
  PARASIM_ASSIGN_OR_RETURN(r.summary, SummarizeTrace(t, table, choice));
  return r;
}

}  // namespace

StatusOr<std::vector<RankTrace>> ReadRankTraces(const std::string& dir,
                                                const KernelClassTable& table,
                                                const StepChoice& choice,
                                                const JsonTraceOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return InvalidArgument(InputError(dir, 1, 1, "not a folder of per-rank traces"));
  }
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (IsTraceFile(e)) files.push_back(e.path().string());
  }
  if (ec) return InvalidArgument(InputError(dir, 1, 1, "cannot list: " + ec.message()));
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return InvalidArgument(InputError(
        dir, 1, 1, "no traces (*.json, *.json.gz) in the folder; give one file per rank"));
  }
  std::map<int64_t, RankTrace> by_rank;
  for (const std::string& f : files) {
    PARASIM_ASSIGN_OR_RETURN(RankTrace r, ReadOne(f, table, choice, options));
    if (auto it = by_rank.find(r.rank); it != by_rank.end()) {
      return InvalidArgument(InputError(
          f, 1, 1,
          fmt::format("rank {} again (also {}): one trace per rank", r.rank, it->second.file)));
    }
    for (const auto& [rank, other] : by_rank) {
      if (r.world_size > 0 && other.world_size > 0 && r.world_size != other.world_size) {
        return InvalidArgument(
            InputError(f, 1, 1,
                       fmt::format("world_size {}, but {} says {}: traces of different runs?",
                                   r.world_size, other.file, other.world_size)));
      }
    }
    by_rank.emplace(r.rank, std::move(r));
  }
  std::vector<RankTrace> out;
  for (auto& [rank, r] : by_rank) out.push_back(std::move(r));
  return out;
}

}  // namespace parasim
