#pragma once
// NetHosts: hosts joined by real links on this one machine, for process
// tests of a job spread over hosts. Each host is a network namespace made
// by bench/hosts.sh, with one interface (eth0) on a bridge that lives in a
// namespace of its own, its link shaped by tbf; a process in host i reaches
// host j only at Addr(j), over the links, never through loopback. The
// machine's own network is never touched. Needs root. Not thread-safe.
//
// The names start with a prefix unique to the test process and the object
// ("pt<pid>n<k>"), so tests running beside each other never share a host.

#include <string>
#include <vector>

#include "testing/process.h"

namespace pstrain::testing {

class NetHosts {
 public:
  /// Why hosts cannot be made here, in one line, or "" when they can: not
  /// root, no `ip`, `tc` or `bash`, or the kernel refused a network
  /// namespace (a container without CAP_SYS_ADMIN). Probes once per
  /// process, by adding and deleting a namespace.
  static std::string Unavailable();

  /// Brings up `n` hosts (bench/hosts.sh up), each link shaped to `rate`
  /// in both directions (tc's units: "1gbit", "100mbit").
  /// REQUIRES: Unavailable() is "", 1 <= n <= 200.
  /// If bench/hosts.sh fails, adds a test failure naming its output and
  /// leaves ok() false.
  explicit NetHosts(int n, const std::string& rate = "1gbit");
  /// Removes every namespace and link of this object (bench/hosts.sh
  /// down). Processes still running in a host are not killed: their
  /// Process objects must go first.
  ~NetHosts();
  NetHosts(const NetHosts&) = delete;
  NetHosts& operator=(const NetHosts&) = delete;

  /// Whether all `size()` hosts are up.
  bool ok() const { return ok_; }
  int size() const { return static_cast<int>(addrs_.size()); }
  /// The names' prefix (PSTRAIN_HOSTS_PREFIX); host i's namespace is
  /// prefix() + "h" + i.
  const std::string& prefix() const { return prefix_; }
  /// Host i's address (bench/hosts.sh addr), e.g. "10.77.0.2" for host 1.
  /// REQUIRES: 0 <= i < size().
  const std::string& Addr(int i) const;
  /// `args` run in host i: an argv for Process (bench/hosts.sh exec i
  /// ARGS, which execs them: the Process's pid is the program's own).
  /// REQUIRES: 0 <= i < size(), args not empty.
  std::vector<std::string> Cmd(int i,
                               const std::vector<std::string>& args) const;
  /// Runs `args` in host i to its end, waiting up to `timeout_seconds`.
  ProcessResult Run(int i, const std::vector<std::string>& args,
                    double timeout_seconds = 30) const;

 private:
  // bench/hosts.sh with `args`, under this object's prefix.
  std::vector<std::string> Script(const std::vector<std::string>& args) const;

  std::string prefix_;
  std::vector<std::string> addrs_;
  bool ok_ = false;
};

}  // namespace pstrain::testing
