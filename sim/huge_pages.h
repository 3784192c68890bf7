// Large per-task arrays of a replay in transparent huge pages, where the kernel gives them on
// request (Linux THP in its "madvise" mode, the Debian default): the first touch of a fresh array
// then maps 2 MiB at a time instead of 4 KiB, and a replay of a million tasks takes tens of page
// faults where it took thousands. Elsewhere (THP "always" or "never", other systems) the advice
// changes nothing.
//
//   HugePageVector<uint32_t> waiting(n, 1);   // a std::vector whose large storage is advised
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace parasim::sim {

// The PMD-level transparent huge page of x86-64 and arm64 with 4 KiB base pages (Linux
// Documentation/admin-guide/mm/transhuge.rst).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Storage of a huge page or more is aligned to huge pages, rounded up to whole ones and advised
// before its first touch; smaller storage comes from operator new as usual.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  static size_t Rounded(size_t n) {
    return (n * sizeof(T) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  }
  static bool Huge(size_t n) { return n * sizeof(T) >= kHugePageBytes; }

  T* allocate(size_t n) {
    if (!Huge(n)) return static_cast<T*>(::operator new(n * sizeof(T)));
    void* p = std::aligned_alloc(kHugePageBytes, Rounded(n));
    if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, Rounded(n), MADV_HUGEPAGE);  // a hint: an error leaves small pages
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (!Huge(n)) {
      ::operator delete(p);
    } else {
      std::free(p);
    }
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

// The bytes a vector's storage takes: its capacity, rounded up to whole huge pages when they
// back it (the kernel maps the tail of the last one too).
template <class T, class A>
size_t StorageBytes(const std::vector<T, A>& v) {
  if constexpr (std::is_same_v<A, HugePageAllocator<T>>) {
    if (A::Huge(v.capacity())) return A::Rounded(v.capacity());
  }
  return v.capacity() * sizeof(T);
}

}  // namespace parasim::sim
