#include "rdzv/master_key.h"

#include <algorithm>
#include <cmath>

namespace pstrain::rdzv {

namespace {

using Clock = std::chrono::steady_clock;

// How often Find asks etcd again: a master announces once.
constexpr std::chrono::milliseconds kPoll{100};

}  // namespace

std::chrono::seconds LeaseFor(double dead_after) {
  const double seconds = dead_after > 0 ? dead_after : 30;
  return std::chrono::seconds(
      std::max<int64_t>(2, static_cast<int64_t>(std::ceil(seconds))));
}

MasterKey::MasterKey(std::string endpoint, const std::string& rdzv_id,
                     std::chrono::milliseconds timeout)
    : key_("/pstrain/" + rdzv_id + "/master"),
      endpoint_(endpoint),
      timeout_(timeout),
      client_(std::move(endpoint), timeout) {}

MasterKey::~MasterKey() {
  if (!renewer_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  renewer_.join();
  // The job ended here: no one need wait out the lease.
  (void)client_.Revoke(lease_);
}

Result<bool> MasterKey::Campaign(std::chrono::seconds ttl,
                                 std::function<void(const Status&)> on_lost) {
  ttl = std::max(ttl, std::chrono::seconds(2));
  if (lease_ == 0) {
    PS_ASSIGN_OR_RETURN(lease_, client_.GrantLease(ttl.count()));
  }
  PS_ASSIGN_OR_RETURN(std::optional<int64_t> term,
                      client_.Create(key_, "", lease_));
  if (!term) {
    // The next try takes a lease of its own: this one may expire first.
    const Status revoked = client_.Revoke(lease_);
    lease_ = 0;
    PS_RETURN_IF_ERROR(revoked);
    return false;
  }
  term_ = *term;
  renewer_ =
      std::thread([this, ttl, lost = std::move(on_lost)] { Renew(ttl, lost); });
  return true;
}

// Renews every third of the TTL. A renewal that finds the lease expired,
// or none that succeeds for a whole TTL (etcd unreachable: it may have
// let the lease go), means another may be master now.
void MasterKey::Renew(std::chrono::seconds ttl,
                      std::function<void(const Status&)> lost) {
  EtcdClient renewing(endpoint_,
                      std::min<std::chrono::milliseconds>(timeout_, ttl));
  auto renewed = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  const auto every = std::chrono::milliseconds(ttl) / 3;
  while (!wake_.wait_for(lock, every, [this] { return stopping_; })) {
    lock.unlock();
    auto left = renewing.KeepAlive(lease_);
    const auto now = Clock::now();
    if (left.ok() && *left > 0)
      renewed = now;
    const bool expired = (left.ok() && *left == 0) || now - renewed >= ttl;
    lock.lock();
    if (expired && !stopping_) {
      lock.unlock();
      lost(Unavailable("lost the master's lease in etcd (term " +
                       std::to_string(term_) +
                       "): another rank may be the master now, so this "
                       "one serves no more"));
      return;
    }
  }
}

Status MasterKey::Announce(const std::string& address) {
  PS_ASSIGN_OR_RETURN(bool mine, client_.Update(key_, address, lease_, term_));
  if (!mine) {
    return Unavailable(
        "the master's key in etcd is no longer this rank's "
        "(term " +
        std::to_string(term_) + ")");
  }
  return Status::Ok();
}

Result<MasterKey::Master> MasterKey::Find(std::chrono::milliseconds wait,
                                          const std::string& lost) {
  const auto deadline = Clock::now() + wait;
  std::optional<Master> last;
  for (;;) {
    PS_ASSIGN_OR_RETURN(std::optional<EtcdClient::Entry> entry,
                        client_.Get(key_));
    if (entry && !entry->value.empty()) {
      last = Master{entry->value, entry->create_revision};
      if (entry->value != lost)
        return *last;
    }
    if (Clock::now() + kPoll > deadline)
      break;
    std::this_thread::sleep_for(kPoll);
  }
  if (last)
    return *last;
  return Unavailable("no master has said where it listens in etcd at " +
                     endpoint_ + " (key " + key_ + ") within " +
                     std::to_string(wait.count()) + " ms");
}

}  // namespace pstrain::rdzv
