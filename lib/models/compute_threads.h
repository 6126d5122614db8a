#pragma once
// The threads a process computes with: libtorch's intra-op pool and the
// system BLAS's (OpenBLAS runs Debian libtorch's linear layers and sizes its
// own pool, which libtorch does not). Process-wide: call it from the thread
// that computes, before it does.

namespace pstrain::models {

/// Sets libtorch's intra-op threads (at::set_num_threads) and OpenBLAS's,
/// when it is loaded, to `threads`. 0 or less: leaves both as they are.
void SetComputeThreads(int threads);

/// Lowers the calling thread's scheduling priority to the least (Linux's
/// SCHED_IDLE, else nice 19), so that it runs only on cores the other
/// threads leave idle; Linux threads each have their own. Threads it starts
/// inherit it. Returns false where the system refuses both.
bool LowerThisThreadsPriority();

}  // namespace pstrain::models
