// Test helpers of hardware/readers: temporary files (plain, gzipped, a gzip bomb) and the paths
// of fixtures under tests/fixtures (a Bazel data dependency, read from the runfiles tree).
//
//   const std::string p = TempFile("t.json.gz");
//   WriteGzip(p, R"({"traceEvents": []})");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace parasim::testing {

// A path under the test's temporary directory ($TEST_TMPDIR, else /tmp).
std::string TempFile(std::string_view name);
void WriteText(const std::string& path, std::string_view text);
void WriteGzip(const std::string& path, std::string_view text);
// `prefix`, then spaces up to `inflated_bytes` in all, as one gzip member per MiB: deflate's
// best ratio (about 1000x), so 4 GiB of input costs 4 MB of file and no time to write.
void WriteGzipBomb(const std::string& path, std::string_view prefix, int64_t inflated_bytes);
// tests/fixtures/<relative> in the runfiles tree.
std::string Fixture(std::string_view relative);
std::string ReadAll(const std::string& path);

}  // namespace parasim::testing
