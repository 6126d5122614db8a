#include "worker/random_state.h"

#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include "util/check.h"

namespace pstrain::worker {

void RandomState::Keep() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  state_ = gen.get_state();
}

void RandomState::Restore() {
  PS_CHECK(state_.defined()) << "RandomState::Restore before Keep";
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state_);
}

}  // namespace pstrain::worker
