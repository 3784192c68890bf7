#include "tools/verbs/inputs.h"

#include <fmt/core.h>

#include <algorithm>
#include <thread>

#include "sim/io.h"
#include "strategies/sweep_results.h"

namespace parasim {

StatusOr<Scenario> LoadScenarioOf(const Document& doc, const std::vector<std::string>& sets) {
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  return LoadScenario(doc.Input(), sets, cat);
}

StatusOr<Scenario> LoadFixedScenario(const Document& doc, const std::vector<std::string>& sets) {
  PARASIM_ASSIGN_OR_RETURN(Scenario s, LoadScenarioOf(doc, sets));
  PARASIM_RETURN_IF_ERROR(s.fixed_layout);
  return s;
}

StatusOr<ScenarioPair> LoadPair(const PairInput& in) {
  if (in.b.empty() && in.sets_a.empty() && in.sets_b.empty()) {
    return InvalidArgument(fmt::format(
        "{}:1:1: error: nothing to compare: give a second scenario (B.yaml, or report --vs "
        "B.yaml), or two variants of this one with --set-a KEY=VALUE and --set-b KEY=VALUE",
        in.a.file));
  }
  std::vector<std::string> sa = in.sets, sb = in.sets;
  sa.insert(sa.end(), in.sets_a.begin(), in.sets_a.end());
  sb.insert(sb.end(), in.sets_b.begin(), in.sets_b.end());
  PARASIM_ASSIGN_OR_RETURN(Catalogs cat, LoadCatalogs());
  PARASIM_ASSIGN_OR_RETURN(Scenario a, LoadScenario(in.a.Input(), sa, cat));
  PARASIM_RETURN_IF_ERROR(a.fixed_layout);
  PARASIM_ASSIGN_OR_RETURN(Scenario b,
                           LoadScenario(in.b.empty() ? in.a.Input() : in.b.Input(), sb, cat));
  PARASIM_RETURN_IF_ERROR(b.fixed_layout);
  return ScenarioPair{std::move(a), std::move(b)};
}

uint64_t ScenarioFingerprint(const Document& doc, const std::vector<std::string>& sets,
                             const std::vector<std::string>& referenced) {
  std::string text;
  if (doc.text) {
    text = *doc.text;
  } else if (StatusOr<std::string> read = ReadFile(doc.file); read.ok()) {
    text = std::move(read).value();
  }
  uint64_t h = Fnv1a(text);
  for (const std::string& set : sets) h = Fnv1a("\n--set " + set, h);
  for (const std::string& path : referenced) {
    // A file the scenario names (a calibration profile): its contents, not its name.
    StatusOr<std::string> read = ReadFile(path);
    h = Fnv1a("\n" + (read.ok() ? *read : path), h);
  }
  return h;
}

SweepOptions SweepOptionsOf(int jobs, const Processes* processes) {
  SweepOptions so;
  so.jobs = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  so.processes = processes;
  return so;
}

StatusOr<std::vector<int64_t>> ParseGpuList(const std::string& text) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  auto bad = [&](const std::string& why) {
    return InvalidArgument(
        fmt::format("--gpus={}:1:1: error: {}; expected counts such as "
                    "8,16,64 or 8,16,...,4096",
                    text, why));
  };
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    size_t c = text.find(',', pos);
    parts.push_back(text.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  bool ellipsis = false;
  for (const auto& p : parts) {
    if (p == "...") {
      if (ellipsis || out.size() < 2) return bad("'...' needs two counts before it");
      ellipsis = true;
      continue;
    }
    int64_t v = 0;
    try {
      size_t used = 0;
      v = std::stoll(p, &used);
      if (used != p.size()) return bad(fmt::format("'{}' is not a count", p));
    } catch (const std::exception&) {
      return bad(fmt::format("'{}' is not a count", p));
    }
    if (v < 1 || v > 100'000'000) return bad(fmt::format("{} GPUs is out of range", v));
    if (ellipsis && v <= out.back()) {
      return bad(
          fmt::format("'...' counts up from {} to the count after it, and {} is not "
                      "larger",
                      out.back(), v));
    }
    if (ellipsis && out.size() >= 2 && out.back() <= out[out.size() - 2]) {
      return bad("counts must increase");  // 16,8,...,64 had read as more than 128 counts
    }
    if (ellipsis && out.size() >= 2) {
      const int64_t a = out[out.size() - 2], b = out.back();
      const bool geometric = b % a == 0 && b / a >= 2;
      for (int64_t x = geometric ? b * (b / a) : b + (b - a); x < v;
           x = geometric ? x * (b / a) : x + (b - a)) {
        if (out.size() >= kMaxGpuCounts) break;  // refused below
        out.push_back(x);
      }
      ellipsis = false;
    }
    out.push_back(v);
    if (out.size() > kMaxGpuCounts) {
      return bad(
          fmt::format("more than {} counts (each is a sweep of its own); a geometric "
                      "progression such as 8,16,...,{} spans the same range in fewer",
                      kMaxGpuCounts, v));
    }
  }
  if (ellipsis) return bad("'...' needs the last count after it");  // (16,32,... had run 16,32)
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i] <= out[i - 1]) return bad("counts must increase");
  }
  return out;
}

}  // namespace parasim
