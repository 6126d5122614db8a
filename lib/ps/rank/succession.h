#pragma once
// Succession: the arbiter's word that this process is the master now.
// Rank 0 holds the job (the spec, the roster of servers, evaluation, the
// checkpoints, the summary); when it dies, the standby of its shard may
// take those roles over with the shard, but only once something that
// cannot be wrong about the death says so: a rank that merely lost its
// connection to rank 0 cannot tell a dead master from one it is cut off
// from, and two masters must never act at once (share/doc/design.md,
// "The master's succession").
//
// On one machine that something is `pstrain launch`, the parent of every
// rank: it reaps rank 0 and then names the next master by SIGUSR1
// (--rdzv_backend launch). With --rdzv_backend static (the default) no
// one is ever named, and rank 0's death ends the job.
//
// Threading: Named may be called from any thread; the word itself comes
// in a signal handler.

#include <chrono>
#include <memory>
#include <string>

#include "util/result.h"

namespace pstrain::ps {

class Succession {
 public:
  virtual ~Succession() = default;
  /// Whether the arbiter named this process master, waiting up to `wait`
  /// for its word (0: only whether it came already). Once true, true.
  virtual bool Named(std::chrono::milliseconds wait) = 0;
};

/// --rdzv_backend: "static" (nullptr: no succession) or "launch" (a
/// Succession named by SIGUSR1 from launch; its handler is installed here,
/// so call it before launch may send the word). kInvalidArgument naming
/// --rdzv_backend for any other value.
Result<std::unique_ptr<Succession>> MakeSuccession(const std::string& backend);

}  // namespace pstrain::ps
