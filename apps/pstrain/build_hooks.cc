// The shipped pstrain's build hooks (build_hooks.h): no flags of its own.

#include "apps/pstrain/build_hooks.h"

namespace pstrain::apps {

WorkHook AddWorkHooks(CLI::App*) {
  return [](worker::TrainerOptions*) {};
}

LaunchHook AddLaunchHooks(CLI::App*) {
  return [](int) { return std::vector<std::string>(); };
}

}  // namespace pstrain::apps
