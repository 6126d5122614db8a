#pragma once
// Internal to the launcher: SignalPipe, which turns SIGINT, SIGTERM and
// SIGCHLD into bytes on a pipe that poll() can wait on (the self-pipe
// trick), plus the file-descriptor helpers it and the launcher share.
// POSIX only. Not thread-safe; at most one SignalPipe may exist at a time.

#include <signal.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "util/status.h"

namespace pstrain::cluster::internal {

/// An owned file descriptor, closed on destruction. Move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ~Fd() { Reset(); }

  /// -1 when closed.
  int get() const { return fd_; }
  /// Closes the descriptor held, then holds `fd`.
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

/// kIOError "`what`: <strerror(error)>".
Status Errno(const std::string& what, int error = errno);

/// A close-on-exec pipe whose ends are both above fd 2 (so that dup2 onto
/// stdout or stderr in a child cannot clobber one). `nonblocking` applies
/// to the read end. Returns kIOError when pipe2 or fcntl fails.
[[nodiscard]] Status MakePipe(Fd* read_end, Fd* write_end, bool nonblocking);

/// While installed, SIGINT, SIGTERM and SIGCHLD write their number as one
/// byte to a pipe; the destructor restores the previous handlers.
class SignalPipe {
 public:
  SignalPipe() = default;
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;
  ~SignalPipe();

  /// Makes the pipe and installs the handlers. Returns kIOError on failure.
  /// REQUIRES: no other SignalPipe is installed.
  [[nodiscard]] Status Install();

  /// Readable when a signal arrived; poll() it.
  int fd() const { return read_.get(); }

  /// The signals caught since the last call, oldest first. Never blocks.
  std::vector<int> Take();

  /// In a forked child before exec: default dispositions, except that a
  /// SIGINT or SIGTERM ignored before Install stays ignored.
  /// Async-signal-safe.
  void ResetInChild() const;

 private:
  static constexpr size_t kNumSignals = 3;
  Fd read_, write_;
  struct sigaction old_[kNumSignals] = {};
  size_t installed_ = 0;
};

}  // namespace pstrain::cluster::internal
