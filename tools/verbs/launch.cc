#include "tools/verbs/launch.h"

#include <fmt/core.h>

namespace parasim {

Status CheckLaunch(const std::string& format) {
  if (format.empty() || format == "megatron" || format == "torchtitan") return Status::Ok();
  return InvalidArgument(fmt::format(
      "--launch: '{}' is not accepted; expected megatron (Megatron-LM flags) or torchtitan (a "
      "torchtitan job config)",
      format));
}

std::string LaunchText(const LaunchConfig& l, const std::string& format) {
  const bool megatron = format == "megatron";
  std::string out = megatron ? "\nlaunch (Megatron-LM):\n" + MegatronScript(l)
                             : "\nlaunch (torchtitan job config):\n" + TorchtitanToml(l);
  const auto& missing = megatron ? l.megatron_missing : l.torchtitan_missing;
  if (!missing.empty()) out += "not carried by the launch (key: value, why):\n";
  for (const NotExported& m : missing) {
    out += fmt::format("  {}: {}  ({})\n", m.key, m.value, m.why);
  }
  return out;
}

Json LaunchJson(const LaunchConfig& l, const std::string& format) {
  const bool megatron = format == "megatron";
  Json j = Json::Object();
  j.Set("format", format);
  if (megatron) {
    Json tokens = Json::Array();
    for (const std::string& t : l.megatron) tokens.Push(t);
    j.Set("megatron", tokens).Set("script", MegatronScript(l));
  } else {
    j.Set("toml", TorchtitanToml(l));
  }
  Json missing = Json::Array();
  for (const NotExported& m : megatron ? l.megatron_missing : l.torchtitan_missing) {
    Json o = Json::Object();
    missing.Push(o.Set("key", m.key).Set("value", m.value).Set("why", m.why));
  }
  return j.Set("not_exported", missing);
}

}  // namespace parasim
