#include "testing/alloc_counter.h"

#include <algorithm>
#include <cstdlib>
#include <new>

// Counting replacements of the global operator new/delete for the whole test
// binary (see alloc_counter.h).
namespace {

struct AllocStats {
  bool on = false;
  size_t count = 0;
  size_t largest = 0;
};
thread_local AllocStats t_alloc;
}  // namespace

void* operator new(std::size_t n) {
  if (t_alloc.on) {
    ++t_alloc.count;
    t_alloc.largest = std::max(t_alloc.largest, n);
  }
  if (void* p = std::malloc(n == 0 ? 1 : n))
    return p;
  throw std::bad_alloc();
}
// Out of line: once inlined next to a new-expression, GCC 12 mistakes the
// free() for a mismatched deallocation (-Wmismatched-new-delete).
[[gnu::noinline]] void operator delete(void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace pstrain::testing {

AllocCounter::AllocCounter() {
  t_alloc = AllocStats{true, 0, 0};
}
AllocCounter::~AllocCounter() {
  Stop();
}
void AllocCounter::Stop() {
  t_alloc.on = false;
}
size_t AllocCounter::count() const {
  return t_alloc.count;
}
size_t AllocCounter::largest() const {
  return t_alloc.largest;
}

}  // namespace pstrain::testing
