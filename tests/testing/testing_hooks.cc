// The build hooks (apps/pstrain/build_hooks.h) of pstrain_testing, the
// test-only build of pstrain: hidden flags that slow a worker, hold it,
// swap its model or make it throw, for process tests and the straggler
// benchmark. Never installed; the shipped pstrain has none of these flags.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <c10/util/Exception.h>

#include "apps/pstrain/build_hooks.h"
#include "models/model_zoo.h"

namespace pstrain::apps {
namespace {

struct WorkKnobs {
  int delay_ms = 0;            // sleep this long as each step's compute begins
  std::string model_override;  // build this model instead of the job's
  std::string throw_in_step;   // c10, std or int: throw one at the first step
  // Before the step that begins hold_before_step steps after the first,
  // wait until the file hold_until exists: a test that must read a run
  // while it is alive holds it there, whatever the machine's speed, and
  // lets it finish by creating the file.
  int64_t hold_before_step = -1;
  std::string hold_until;
  int64_t steps_begun = 0;  // on the training thread
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

// The heartbeats go on meanwhile, so rank 0 still hears the worker.
void HoldUntil(const std::string& path) {
  while (!std::filesystem::exists(path))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void BeforeStep(WorkKnobs* k) {
  if (!k->throw_in_step.empty())
    Throw(k->throw_in_step);
  if (k->steps_begun++ == k->hold_before_step)
    HoldUntil(k->hold_until);
  if (k->delay_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(k->delay_ms));
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
  auto* until = work->add_option("--hold_until", k->hold_until)->group("");
  work->add_option("--hold_before_step", k->hold_before_step)
      ->group("")
      ->check(CLI::NonNegativeNumber)
      ->needs(until);
  return [k](worker::TrainerOptions* o) {
    if (!k->model_override.empty()) {
      o->make_model = [k](const std::string&) {
        return models::MakeModel(k->model_override);
      };
    }
    if (k->delay_ms > 0 || !k->throw_in_step.empty() ||
        k->hold_before_step >= 0) {
      o->before_step = [k] { BeforeStep(k.get()); };
    }
  };
}

LaunchHook AddLaunchHooks(CLI::App* launch) {
  auto delay_rank = std::make_shared<int>(-1);
  auto delay_ms = std::make_shared<int>(0);
  auto hold_before_step = std::make_shared<int64_t>(-1);
  auto hold_until = std::make_shared<std::string>();
  launch->add_option("--delay_rank", *delay_rank)->group("");
  launch->add_option("--delay_ms", *delay_ms)
      ->group("")
      ->check(CLI::NonNegativeNumber);
  // Every worker holds before the same step (AddWorkHooks).
  auto* until = launch->add_option("--hold_until", *hold_until)->group("");
  launch->add_option("--hold_before_step", *hold_before_step)
      ->group("")
      ->check(CLI::NonNegativeNumber)
      ->needs(until);
  return [delay_rank, delay_ms, hold_before_step, hold_until](int rank) {
    std::vector<std::string> own;
    if (rank == *delay_rank)
      own = {"--delay_ms", std::to_string(*delay_ms)};
    if (*hold_before_step >= 0) {
      own.insert(own.end(),
                 {"--hold_before_step", std::to_string(*hold_before_step),
                  "--hold_until", *hold_until});
    }
    return own;
  };
}

}  // namespace pstrain::apps
