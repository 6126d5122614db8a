// The build hooks (apps/pstrain/build_hooks.h) of pstrain_testing, the
// test-only build of pstrain: hidden flags that slow a worker, swap its
// model or make it throw, for process tests and the straggler benchmark.
// Never installed; the shipped pstrain has none of these flags.

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include <c10/util/Exception.h>

#include "apps/pstrain/build_hooks.h"
#include "models/model_zoo.h"

namespace pstrain::apps {
namespace {

struct WorkKnobs {
  int delay_ms = 0;            // sleep this long as each step's compute begins
  std::string model_override;  // build this model instead of the job's
  std::string throw_in_step;   // c10, std or int: throw one at the first step
};

// An exception of `kind` (WorkKnobs::throw_in_step), as libtorch, the
// standard library or other code throws one.
[[noreturn]] void Throw(const std::string& kind) {
  if (kind == "c10")
    TORCH_CHECK(false, "a libtorch error thrown by --throw_in_step");
  if (kind == "std")
    throw std::out_of_range("an exception thrown by --throw_in_step");
  throw 42;
}

}  // namespace

WorkHook AddWorkHooks(CLI::App* work) {
  auto k = std::make_shared<WorkKnobs>();
  work->add_option("--delay_ms", k->delay_ms)
      ->group("")
      ->check(CLI::NonNegativeNumber);
  work->add_option("--model_override", k->model_override)->group("");
  work->add_option("--throw_in_step", k->throw_in_step)
      ->group("")
      ->check(CLI::IsMember({"c10", "std", "int"}));
  return [k](worker::TrainerOptions* o) {
    if (!k->model_override.empty()) {
      o->make_model = [k](const std::string&) {
        return models::MakeModel(k->model_override);
      };
    }
    if (k->delay_ms > 0 || !k->throw_in_step.empty()) {
      o->before_step = [k] {
        if (!k->throw_in_step.empty())
          Throw(k->throw_in_step);
        std::this_thread::sleep_for(std::chrono::milliseconds(k->delay_ms));
      };
    }
  };
}

LaunchHook AddLaunchHooks(CLI::App* launch) {
  auto delay_rank = std::make_shared<int>(-1);
  auto delay_ms = std::make_shared<int>(0);
  launch->add_option("--delay_rank", *delay_rank)->group("");
  launch->add_option("--delay_ms", *delay_ms)
      ->group("")
      ->check(CLI::NonNegativeNumber);
  return [delay_rank, delay_ms](int rank) {
    if (rank != *delay_rank)
      return std::vector<std::string>();
    return std::vector<std::string>{"--delay_ms", std::to_string(*delay_ms)};
  };
}

}  // namespace pstrain::apps
