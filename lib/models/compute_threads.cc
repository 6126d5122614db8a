#include "models/compute_threads.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ATen/Parallel.h>

namespace pstrain::models {

void SetComputeThreads(int threads) {
  if (threads <= 0)
    return;
  at::set_num_threads(threads);
  using SetFn = void (*)(int);
  if (auto fn = reinterpret_cast<SetFn>(
          dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    fn(threads);
  }
}

bool LowerThisThreadsPriority() {
  const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
  sched_param param{};
  if (sched_setscheduler(tid, SCHED_IDLE, &param) == 0)
    return true;
  return setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 19) == 0;
}

}  // namespace pstrain::models
