#pragma once
// Process: runs a real program (usually the pstrain binary under test) with
// its stdout and stderr captured in files, for tests that need whole
// processes: launch, serve + work, a killed or silent peer.

#include <sys/types.h>

#include <string>
#include <vector>

namespace pstrain::testing {

/// The pstrain binary under test ($PSTRAIN_BIN, set by CTest).
std::string PstrainBin();
/// pstrain_testing, the test-only build of pstrain with hidden flags that
/// slow a worker, swap its model or make it throw (testing_hooks.cc): the
/// file beside PstrainBin().
std::string PstrainTestingBin();

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed by one
  bool timed_out = false;
  double seconds = 0;  // from start to exit
  std::string out, err;
};

class Process {
 public:
  /// Starts `args` (args[0] is the program path). Aborts the test binary if
  /// it cannot start, which only happens when the test itself is broken.
  explicit Process(std::vector<std::string> args);
  ~Process();  // kills the process (SIGKILL) if still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  /// Waits up to `timeout_seconds`; on timeout kills it (SIGKILL).
  ProcessResult Wait(double timeout_seconds);
  void Signal(int sig);
  /// Waits up to `timeout_seconds` for `text` to appear in its stderr so
  /// far; whether it did.
  bool WaitForErr(const std::string& text, double timeout_seconds) const;
  /// Waits up to `timeout_seconds` (polling its stdout and stderr every
  /// 20 ms) for the process's first `listen` event, which a pstrain server
  /// emits once it listens, and returns that event's port: the one the
  /// kernel picked for `--master_port 0`. Reads the JSON line on stdout
  /// (--json) or else the human line on stderr ("listen ... port=N ...").
  /// On timeout, or if the process exits without one, adds a test failure
  /// naming the process, with its output so far, and returns -1. Leaves the
  /// process running (and unreaped: Wait() still reports its exit).
  int ListenPort(double timeout_seconds) const;
  /// Its stdout so far.
  std::string OutSoFar() const;
  pid_t pid() const { return pid_; }

 private:
  // Whether the process has exited, without reaping it; *exit_code is then
  // its status as ProcessResult::exit_code has it (-1 once Wait() reaped it).
  bool Exited(int* exit_code) const;

  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string command_;  // its argv, for messages
  std::string out_path_, err_path_;
  double start_ = 0;
};

/// Lines of process `pid`'s memory map that map a shared-memory segment
/// (net/shm_segment.h's memfd): one per connection it has moved there.
int MappedShmSegments(pid_t pid);

/// The TCP port process `pid` listens on (read from /proc: its sockets'
/// inodes in the LISTEN table), or -1 if none yet: the port a program
/// given port 0 was bound to, when it does not print it.
int ListeningPort(pid_t pid);

/// Starts pstrain with `args` and waits up to `timeout_seconds`.
ProcessResult RunPstrain(const std::vector<std::string>& args,
                         double timeout_seconds);

}  // namespace pstrain::testing
