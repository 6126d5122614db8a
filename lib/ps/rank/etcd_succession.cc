#include "ps/rank/etcd_succession.h"

#include <atomic>
#include <thread>

#include "rdzv/master_key.h"

namespace pstrain::ps {

namespace {

using Clock = std::chrono::steady_clock;

// How often a standby of rank 0 tries the key while rank 0's lease holds.
constexpr std::chrono::milliseconds kTry{200};

class EtcdSuccession : public Succession {
 public:
  explicit EtcdSuccession(const RdzvOptions& rdzv)
      : key_(rdzv.endpoint, rdzv.id, rdzv.timeout) {}

  bool Named(std::chrono::milliseconds wait,
             std::chrono::seconds lease) override {
    const auto deadline = Clock::now() + wait;
    while (!named_) {
      // An unreachable etcd names no one: try again until `wait`.
      auto won = key_.Campaign(lease, on_lost_);
      if (won.ok() && *won) {
        named_ = true;
        break;
      }
      if (Clock::now() + kTry > deadline)
        break;
      std::this_thread::sleep_for(kTry);
    }
    return named_;
  }

  bool Campaigns() const override { return true; }

  Status Lead(std::chrono::seconds lease) override {
    PS_ASSIGN_OR_RETURN(const bool won, key_.Campaign(lease, on_lost_));
    if (won) {
      named_ = true;
      return Status::Ok();
    }
    auto held = key_.Find(std::chrono::milliseconds(0));
    return Unavailable("the job's master key in etcd is held" +
                       (held.ok() ? " by " + held->address + " (term " +
                                        std::to_string(held->term) + ")"
                                  : std::string()) +
                       ": another master of --rdzv_id runs");
  }

  Status Announce(const std::string& address) override {
    return key_.Announce(address);
  }

  std::optional<std::string> ListenHost() override {
    return key_.local_address();
  }

  Result<std::optional<std::string>> FindMaster(
      std::chrono::milliseconds wait, const std::string& lost) override {
    PS_ASSIGN_OR_RETURN(rdzv::MasterKey::Master master, key_.Find(wait, lost));
    return std::optional<std::string>(master.address);
  }

  void set_on_lost(std::function<void(const Status&)> on_lost) override {
    on_lost_ = std::move(on_lost);
  }

 private:
  rdzv::MasterKey key_;
  std::function<void(const Status&)> on_lost_;
  std::atomic<bool> named_{false};
};

}  // namespace

Result<std::unique_ptr<Succession>> MakeEtcdSuccession(
    const RdzvOptions& rdzv) {
  if (rdzv.endpoint.empty()) {
    return InvalidArgument(
        "--rdzv_backend etcd: expected --rdzv_endpoint host:port of etcd");
  }
  return std::unique_ptr<Succession>(new EtcdSuccession(rdzv));
}

}  // namespace pstrain::ps
