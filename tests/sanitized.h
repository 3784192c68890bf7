// Test helper: whether this binary was built under AddressSanitizer (the second pass of
// .ci/run, `tools/bazel test --config=asan //...`), where the suites run 8-17 times slower
// (measured on a 2-core machine's clean clone: sweep_test 95 s -> 783 s, cli_test 55 s -> 659 s).
// The loops that replay every example or every layout take a sample there: the sanitizer looks for
// memory and undefined-behaviour faults along the code paths, which a sample walks; the normal
// pass checks every item. -DPARASIM_TEST_AS_SANITIZED takes the samples without a sanitizer:
//   tools/bazel test --per_file_copt='(tests|strategies)/.*_test\.cc@-DPARASIM_TEST_AS_SANITIZED'
//   ...
#pragma once

#include <cstddef>
#include <vector>

namespace parasim::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(PARASIM_TEST_AS_SANITIZED)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// Every item normally; under a sanitizer every `stride`-th (the first always), so each run of
// the pass walks the same sample.
template <class T>
std::vector<T> SampledUnderSanitizer(const std::vector<T>& items, size_t stride) {
  if (!kSanitized || stride <= 1) return items;
  std::vector<T> kept;
  for (size_t i = 0; i < items.size(); i += stride) kept.push_back(items[i]);
  return kept;
}

}  // namespace parasim::testing
