#include "hardware/readers/profiler_trace.h"

#include <algorithm>
#include <map>

#include "sim/utf8.h"

namespace parasim {

int64_t ProfilerTrace::MainDevice() const {
  std::map<int64_t, int64_t> count;
  for (const GpuEvent& e : events) ++count[e.device];
  int64_t best = -1, most = 0;
  for (const auto& [device, n] : count) {
    if (n > most) best = device, most = n;
  }
  return best;
}

const TraceDevice* ProfilerTrace::Device(int64_t id) const {
  for (const TraceDevice& d : devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

ProfilerTraceBuilder::ProfilerTraceBuilder(std::string file) { trace_.file = std::move(file); }

uint32_t ProfilerTraceBuilder::InternName(std::string_view name) {
  auto it = name_ids_.find(std::string(name));
  if (it != name_ids_.end()) return it->second;
  bool repaired = false;
  std::string clean = RepairUtf8(name, &repaired);
  if (repaired) ++trace_.names_repaired;
  const auto id = static_cast<uint32_t>(trace_.names.size());
  trace_.names.push_back(std::move(clean));
  name_ids_.emplace(std::string(name), id);
  return id;
}

namespace {

// Steps in start order, one per number (the widest range when a number repeats: a trace may mark
// a step both as a user annotation and as a CPU op).
std::vector<ProfilerStep> UniqueSteps(std::vector<ProfilerStep> steps) {
  std::map<int64_t, ProfilerStep> by_number;
  for (const ProfilerStep& s : steps) {
    auto [it, fresh] = by_number.emplace(s.number, s);
    if (!fresh && s.dur_ns > it->second.dur_ns) it->second = s;
  }
  std::vector<ProfilerStep> out;
  for (const auto& [n, s] : by_number) out.push_back(s);
  std::sort(out.begin(), out.end(),
            [](const ProfilerStep& a, const ProfilerStep& b) { return a.start_ns < b.start_ns; });
  return out;
}

// The index of the step whose range holds `t`, or -1.
int16_t StepAt(const std::vector<ProfilerStep>& steps, int64_t t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](int64_t v, const ProfilerStep& s) { return v < s.start_ns; });
  if (it == steps.begin()) return -1;
  --it;
  if (t >= it->end_ns()) return -1;
  return static_cast<int16_t>(it - steps.begin());
}

}  // namespace

ProfilerTrace ProfilerTraceBuilder::Finish() && {
  trace_.steps = UniqueSteps(std::move(trace_.steps));
  if (trace_.steps.size() > 32767) trace_.steps.resize(32767);  // GpuEvent::step is int16
  std::sort(launches_.begin(), launches_.end(), [](const TraceLaunch& a, const TraceLaunch& b) {
    return a.correlation < b.correlation;
  });
  for (GpuEvent& e : trace_.events) {
    int64_t t = e.start_ns;
    auto it = std::lower_bound(launches_.begin(), launches_.end(), e.correlation,
                               [](const TraceLaunch& l, int64_t c) { return l.correlation < c; });
    if (e.correlation >= 0 && it != launches_.end() && it->correlation == e.correlation) {
      t = it->start_ns;
    }
    e.step = StepAt(trace_.steps, t);
  }
  launches_.clear();
  launches_.shrink_to_fit();
  name_ids_.clear();
  return std::move(trace_);
}

std::string RepairUtf8(std::string_view s, bool* repaired) {
  *repaired = InvalidUtf8At(s) != std::string_view::npos;
  return *repaired ? ReplaceInvalidUtf8(s) : std::string(s);
}

}  // namespace parasim
