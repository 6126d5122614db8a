#pragma once
// Process spawning for `pstrain launch`: runs one child per rank on this
// machine, relays their output line by line, forwards SIGINT/SIGTERM, and
// tears the whole group down when one child fails. POSIX only.

#include <functional>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "util/result.h"

namespace pstrain::cluster {

struct ChildSpec {
  /// argv[0] is the executable's path (not searched in PATH).
  /// REQUIRES: non-empty.
  std::vector<std::string> argv;
  /// Names the child in prefixes and messages, e.g. "rank 1".
  std::string label;
  /// Its death alone stops nobody: a server whose shard a standby takes
  /// over (--replicas). Its end is told in one line, and the others go
  /// on; the group's status is then the others'. Default: false.
  bool survivable = false;
  /// A survivable child that dies (not one that exits 0) starts again
  /// with these arguments (e.g. a server's with --rejoin), at most
  /// max_restarts times, unless the group is being torn down or the job is
  /// over (ends_job); empty: never.
  std::vector<std::string> restart_argv = {};
  /// Its exit, whatever its status, ends the job (rank 0, which holds
  /// it): from then on no child starts again, since one started again
  /// would wait for a job that is gone. Default: false.
  bool ends_job = false;
  /// How many times restart_argv may start it (launch --max_restarts).
  int max_restarts = 3;
  /// The children (indices into LaunchOptions::children) that may take
  /// this one's place when it dies (not when it exits 0), in order: the
  /// first still running is named by SIGUSR1 (pstrain serve
  /// --rdzv_backend launch: the master's succession), and from then on
  /// ends the job as this one would have, never starting again, with the
  /// rest, then this one, then those before it as its own successors (a
  /// ring). This one's death then stops nobody: it is survivable, and
  /// starts again with restart_argv as one would. None running: as if
  /// empty. Empty (the default): none.
  std::vector<size_t> successors = {};
};

struct LaunchOptions {
  std::vector<ChildSpec> children;
  /// Prefix the children's stdout lines with "[label] ". Set false when they
  /// print JSON Lines on stdout, to pass those through untouched. stderr is
  /// always prefixed. Default: true.
  bool prefix_stdout = true;
  /// Receives the children's stdout lines. Borrowed for the call.
  std::ostream* out = &std::cout;
  /// Receives the children's stderr lines. Borrowed for the call.
  std::ostream* err = &std::cerr;
  /// When set, receives every whole line instead of out and err: the
  /// child's index in `children`, whether the line came from its stderr, and
  /// the line without prefix or '\n'. RunChildren's own messages come with
  /// index children.size(). Called on RunChildren's thread. Default: unset.
  std::function<void(size_t child, bool from_stderr, const std::string& line)>
      on_line;
  /// Seconds between SIGTERM and SIGKILL when tearing the others down.
  /// Default: 5.
  double kill_grace_seconds = 5;
};

/// Starts every child in its own process group, with stdout and stderr on
/// pipes, and copies each line they write to out / err, prefixed, whole
/// lines only (a last line without '\n' is ended at EOF; a line longer than
/// 64 KiB is cut into 64 KiB lines). Blocks until every child has exited.
/// While running, SIGINT and SIGTERM sent to this process are forwarded to
/// every child's process group (the previous handlers are restored before
/// returning). When a child exits non-zero or is killed by a signal, the
/// others get SIGTERM, and SIGKILL after kill_grace_seconds; err gets
/// "pstrain launch: rank 1 exited with status 3; stopping the others". A
/// survivable child's failure only says "pstrain launch: rank 1 was killed
/// by signal 9; the others go on", and one with a successor running says
/// "pstrain launch: rank 0 was killed by signal 9; rank 1 is the master
/// now".
/// Returns the first failing child's exit status (128 + signal number when
/// killed by a signal), or 0 when all exit 0. Returns kIOError when a child
/// cannot be started (e.g. no such executable; those already started are
/// torn down first) or a pipe or poll fails.
/// Not reentrant: at most one call at a time per process (it owns the
/// SIGINT, SIGTERM and SIGCHLD handlers for its duration).
Result<int> RunChildren(const LaunchOptions& options);

/// Threads for each of `n` processes sharing this machine's cores:
/// max(1, hardware_concurrency / n). REQUIRES: n >= 1.
int ThreadsPerProcess(int n);

}  // namespace pstrain::cluster
