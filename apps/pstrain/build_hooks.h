#pragma once
// Where a build of pstrain may add flags of its own to `work` and `launch`.
// The shipped pstrain links build_hooks.cc, whose hooks add nothing; the
// test-only pstrain_testing (tests/testing/testing_hooks.cc, never installed)
// links hooks that slow a worker or swap its model, so that no test knob
// ships in the binary.

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "worker/trainer.h"

namespace pstrain::apps {

/// Sets what the build's own flags ask for in a worker's options.
using WorkHook = std::function<void(worker::TrainerOptions* options)>;
/// The build's own flags for launch's worker child of rank `rank`.
using LaunchHook = std::function<std::vector<std::string>(int rank)>;

/// Adds the build's own flags to `work`; the hook is called once the
/// command line is parsed.
WorkHook AddWorkHooks(CLI::App* work);
/// Adds the build's own flags to `launch`; the hook is called once the
/// command line is parsed, for each worker it starts.
LaunchHook AddLaunchHooks(CLI::App* launch);

}  // namespace pstrain::apps
