// Shared doctest entry point for every test binary.
//
// It honours Bazel's test sharding (a cc_test with shard_count = N runs as N processes, each with
// TEST_TOTAL_SHARDS = N and TEST_SHARD_INDEX = 0..N-1; Bazel's test encyclopedia, "Test
// sharding"): shard k keeps every N-th test case from the k-th, in the order of doctest's registry
// (by line, then name and file), so the shards split the binary's cases between them, and each
// prints doctest's summary of its own cases (the counts .ci/run adds up). Without those variables
// every case runs, as before.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

namespace {

// An unset, empty or malformed variable reads as `fallback`.
long EnvNumber(const char* name, long fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' ? value : fallback;
}

// Keeps this shard's test cases in the registry and drops the others. doctest 2.4 has no sharding
// of its own; its registry (doctest::detail::getRegisteredTests, defined by the implementation
// this file compiles) is the set that Context::run walks.
void KeepThisShard() {
  const long shards = EnvNumber("TEST_TOTAL_SHARDS", 1);
  const long index = EnvNumber("TEST_SHARD_INDEX", 0);
  if (shards <= 1 || index < 0 || index >= shards) return;
  // Bazel asks a test runner that shards to say so by touching this file.
  if (const char* status = std::getenv("TEST_SHARD_STATUS_FILE")) std::ofstream{status};
  std::set<doctest::detail::TestCase>& registered = doctest::detail::getRegisteredTests();
  long position = 0;
  for (auto it = registered.begin(); it != registered.end(); ++position) {
    it = position % shards == index ? std::next(it) : registered.erase(it);
  }
}

}  // namespace

int main(int argc, char** argv) {
  KeepThisShard();
  doctest::Context context(argc, argv);
  return context.run();
}
