#include "exec/huge_page_allocator.h"

#include <sys/mman.h>

#include <cstdlib>

namespace sluice::exec {

void* AllocateTable(size_t bytes) {
  if (bytes < kHugePageBytes) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  // Whole huge pages, so that no small allocation shares the last one.
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = nullptr;
  if (posix_memalign(&p, kHugePageBytes, rounded) != 0) throw std::bad_alloc();
  // Only advice: a kernel without transparent huge pages refuses it, and the memory is still
  // good.
  (void)madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void FreeTable(void* p) { std::free(p); }

}  // namespace sluice::exec
