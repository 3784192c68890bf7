#include "tests/cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace parasim::testing {

std::string Runfile(const std::string& workspace_path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  std::string root = srcdir ? std::string(srcdir) + "/parasim/" : std::string();
  return root + workspace_path;
}

CliResult RunParasim(const std::string& args) {
  return RunShell(Runfile("tools/parasim") + " " + args);
}

CliResult RunShell(const std::string& command) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = tmp ? tmp : "/tmp";
  static int counter = 0;
  std::string base = dir + "/cli_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  std::string cmd = "(" + command + ") >" + base + ".out 2>" + base + ".err";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string WithoutTimings(const std::string& json) {
  std::string out, line;
  std::istringstream in(json);
  while (std::getline(in, line)) {
    if (line.find("\"elapsed_s\"") != std::string::npos ||
        line.find("_per_second\"") != std::string::npos) {
      continue;
    }
    out += line + "\n";
  }
  return out;
}

double KindSeconds(const std::string& json, const std::string& kind, const std::string& key) {
  const size_t at = json.find("\"kind\": \"" + kind + "\"");
  if (at == std::string::npos) return std::nan("");
  const size_t v = json.find("\"" + key + "\":", at);
  if (v == std::string::npos) return std::nan("");
  return std::stod(json.substr(v + key.size() + 3));
}

}  // namespace parasim::testing
