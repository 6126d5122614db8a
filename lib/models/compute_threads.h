#pragma once
// The threads a process computes with: libtorch's intra-op pool and the
// system BLAS's (OpenBLAS runs Debian libtorch's linear layers and sizes its
// own pool, which libtorch does not). Process-wide: call it from the thread
// that computes, before it does.

namespace pstrain::models {

/// Sets libtorch's intra-op threads (at::set_num_threads) and OpenBLAS's,
/// when it is loaded, to `threads`. 0 or less: leaves both as they are.
void SetComputeThreads(int threads);

/// Lowers the calling thread's scheduling priority to the least (nice 19),
/// so that it runs on cores others leave idle; Linux threads have their own
/// nice value. Returns false where the system refuses.
bool LowerThisThreadsPriority();

}  // namespace pstrain::models
