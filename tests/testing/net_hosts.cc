#include "testing/net_hosts.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <sstream>

#include <gtest/gtest.h>

#include "util/check.h"

namespace pstrain::testing {

namespace {

// The path of program `name` in $PATH or the sbin folders (which a
// non-login root shell may leave out); "" if none.
std::string Which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(std::string(path ? path : "") +
                          ":/usr/sbin:/sbin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/" + name;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

std::string HostsScript() {
  return std::string(PSTRAIN_SOURCE_DIR) + "/bench/hosts.sh";
}

std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string Probe() {
  if (::geteuid() != 0)
    return "not root: network namespaces need CAP_NET_ADMIN";
  for (const char* program : {"ip", "tc", "bash", "env"}) {
    if (Which(program).empty())
      return std::string("no `") + program + "` in PATH";
  }
  const std::string ip = Which("ip");
  const std::string name = "pt" + std::to_string(::getpid()) + "probe";
  ProcessResult add = Process({ip, "netns", "add", name}).Wait(30);
  if (add.exit_code != 0) {
    return "cannot add a network namespace (`ip netns add`): " +
           FirstLine(add.err);
  }
  ProcessResult del = Process({ip, "netns", "del", name}).Wait(30);
  if (del.exit_code != 0)
    return "cannot delete network namespace " + name + ": " +
           FirstLine(del.err);
  return "";
}

}  // namespace

std::string NetHosts::Unavailable() {
  static const std::string why = Probe();
  return why;
}

NetHosts::NetHosts(int n, const std::string& rate) {
  PS_CHECK(Unavailable().empty()) << Unavailable();
  PS_CHECK(n >= 1 && n <= 200) << n;
  static std::atomic<int> counter{0};
  prefix_ = "pt" + std::to_string(::getpid()) + "n" + std::to_string(counter++);
  // A process of the same pid killed before its destructor ran (a test's
  // timeout) may have left hosts of this name.
  (void)Process(Script({"down"})).Wait(30);
  ProcessResult up = Process(Script({"up", std::to_string(n), rate})).Wait(60);
  if (up.exit_code != 0 || up.timed_out) {
    ADD_FAILURE() << "bench/hosts.sh up " << n << " " << rate << " (prefix "
                  << prefix_ << ") exited " << up.exit_code << ":\n"
                  << up.out << up.err;
    return;
  }
  for (int i = 0; i < n; ++i) {
    ProcessResult addr = Process(Script({"addr", std::to_string(i)})).Wait(30);
    if (addr.exit_code != 0) {
      ADD_FAILURE() << "bench/hosts.sh addr " << i << " exited "
                    << addr.exit_code << ": " << addr.err;
      return;
    }
    addrs_.push_back(FirstLine(addr.out));
  }
  ok_ = true;
}

NetHosts::~NetHosts() {
  ProcessResult down = Process(Script({"down"})).Wait(60);
  EXPECT_EQ(down.exit_code, 0)
      << "bench/hosts.sh down (prefix " << prefix_ << "): " << down.err;
}

const std::string& NetHosts::Addr(int i) const {
  PS_CHECK(i >= 0 && i < size()) << i;
  return addrs_[i];
}

std::vector<std::string> NetHosts::Cmd(
    int i, const std::vector<std::string>& args) const {
  PS_CHECK(i >= 0 && i < size() && !args.empty()) << i;
  std::vector<std::string> argv = Script({"exec", std::to_string(i)});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

ProcessResult NetHosts::Run(int i, const std::vector<std::string>& args,
                            double timeout_seconds) const {
  return Process(Cmd(i, args)).Wait(timeout_seconds);
}

std::vector<std::string> NetHosts::Script(
    const std::vector<std::string>& args) const {
  // env sets the prefix (and a PATH with `ip` and `tc`) for the script
  // alone, then execs bash, which execs `ip netns exec`, which execs the
  // command: one pid throughout.
  const std::string ip = Which("ip");
  const char* path = std::getenv("PATH");
  std::vector<std::string> argv = {
      Which("env"), "PSTRAIN_HOSTS_PREFIX=" + prefix_,
      "PATH=" + ip.substr(0, ip.rfind('/')) + ":" + (path ? path : ""),
      Which("bash"), HostsScript()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace pstrain::testing
