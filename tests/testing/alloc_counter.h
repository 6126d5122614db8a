#pragma once
// AllocCounter: counts this thread's calls of the global operator new while
// it is alive. pstrain_tests replaces operator new/delete (alloc_counter.cc)
// so that tests can prove a path allocates nothing in steady state. Counting
// is per thread and off unless a counter is alive, so other tests see plain
// malloc/free. Tensor storage (c10's allocator) is not counted; TensorImpls
// and every std container are.

#include <cstddef>

namespace pstrain::testing {

class AllocCounter {
 public:
  AllocCounter();
  ~AllocCounter();
  AllocCounter(const AllocCounter&) = delete;
  AllocCounter& operator=(const AllocCounter&) = delete;

  void Stop();
  size_t count() const;
  size_t largest() const;  // bytes of the largest allocation counted
};

}  // namespace pstrain::testing
