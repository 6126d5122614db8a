#pragma once
// One child process of `pstrain launch` (cluster/launcher.h): started in a
// process group of its own with its stdout and stderr on pipes, our signal
// handlers undone in it before exec, and exec's failure told back through
// a pipe of its own. POSIX only.

#include <sys/types.h>

#include <string>
#include <vector>

#include "cluster/signal_pipe.h"
#include "util/result.h"

namespace pstrain::cluster::internal {

/// Starts `args` (args[0] a path, not searched in PATH; REQUIRES: not
/// empty) with SIGINT, SIGTERM and SIGCHLD blocked across the fork, its
/// stdout and stderr on new pipes whose read ends become *out and *err.
/// Returns its pid; kIOError naming `label` when the pipes, fork or exec
/// fail (the child is reaped then).
Result<pid_t> Spawn(const SignalPipe& signals,
                    const std::vector<std::string>& args,
                    const std::string& label, Fd* out, Fd* err);
/// A waitpid status as an exit code: the status, or 128 + the signal.
int ExitCode(int wait_status);
/// Waits for `pid` regardless of signals. Returns its exit code.
int WaitBlocking(pid_t pid);
/// "was killed by signal 9" or "exited with status 3".
std::string Describe(int wait_status);

}  // namespace pstrain::cluster::internal
