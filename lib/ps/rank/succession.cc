#include "ps/rank/succession.h"

#include <signal.h>

#include <atomic>
#include <thread>

#include "net/address.h"
#include "net/client.h"
#include "ps/rank/etcd_succession.h"

namespace pstrain::ps {

namespace {

// Set by the handler: a lock-free atomic store is async-signal-safe.
std::atomic<bool> named{false};

extern "C" void OnNamed(int) {
  named.store(true);
}

// The word from `pstrain launch`, which saw rank 0 die (it reaped it).
class LaunchSuccession : public Succession {
 public:
  bool Named(std::chrono::milliseconds wait, std::chrono::seconds) override {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    // A signal handler can wake no condition variable safely; the word
    // comes once per job, so a short poll costs nothing.
    while (!named.load()) {
      if (std::chrono::steady_clock::now() >= deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
};

}  // namespace

Result<std::unique_ptr<Succession>> MakeSuccession(const RdzvOptions& rdzv) {
  if (rdzv.backend == "static")
    return std::unique_ptr<Succession>();
  if (rdzv.backend == "etcd")
    return MakeEtcdSuccession(rdzv);
  if (rdzv.backend != "launch") {
    return InvalidArgument("--rdzv_backend " + rdzv.backend +
                           ": expected static, launch or etcd");
  }
  struct sigaction action {};
  action.sa_handler = OnNamed;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(SIGUSR1, &action, nullptr) != 0)
    return IOError("sigaction(SIGUSR1) failed");
  return std::unique_ptr<Succession>(new LaunchSuccession());
}

Status FindMaster(Succession* succession, std::chrono::milliseconds wait,
                  const std::string& lost, std::string* host, int* port) {
  if (succession == nullptr)
    return Status::Ok();
  PS_ASSIGN_OR_RETURN(std::optional<std::string> found,
                      succession->FindMaster(wait, lost));
  if (!found)
    return Status::Ok();
  return net::SplitAddress(*found, host, port);
}

Status FindLiveMaster(Succession* succession, std::chrono::milliseconds timeout,
                      std::string* host, int* port) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  std::string lost;
  for (;;) {
    std::string h = *host;
    int p = *port;
    // Asked again each second while the address is a dead master's.
    PS_RETURN_IF_ERROR(FindMaster(
        succession, lost.empty() ? timeout : std::chrono::milliseconds(1000),
        lost, &h, &p));
    // Only whether something listens there: no hello, so nothing to say.
    net::Client probe;
    if (probe.Connect(h, p, std::chrono::milliseconds(1000)).ok()) {
      *host = h;
      *port = p;
      return Status::Ok();
    }
    lost = h + ":" + std::to_string(p);
    if (Clock::now() >= deadline) {
      return Unavailable("no master listens at " + lost +
                         ", where the arbiter says, within --timeout");
    }
  }
}

}  // namespace pstrain::ps
