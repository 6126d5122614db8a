#pragma once
// MasterKey: who is a job's master, as etcd says. The key
// /pstrain/<rdzv_id>/master exists only under the lease of the process
// that created it, which is the master; the revision that created it is
// the master's term, later for every later master. Its value is where the
// master listens ("host:port"), once it does.
//
// Why a lease: a process that dies, stops or is cut off from etcd renews
// nothing, so its key is gone within the lease's TTL, and only then can
// another create it. etcd decides by quorum, so two processes never both
// hold the key; and a master that finds its lease expired when it renews
// (it was stopped, say) knows another may be master now, and stops. This
// is Kubernetes' and torchrun's use of etcd ("lease-based leader
// election"; Chubby, Burrows, OSDI 2006, §2.4: locks with sequencers).
//
// Threading: Campaign and Announce from one thread at a time, Find from
// any; the lease is renewed on a thread of the key's own.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "rdzv/etcd_client.h"
#include "util/result.h"

namespace pstrain::rdzv {

/// The lease of a job whose ranks are lost after `dead_after` seconds of
/// silence (--dead_after; 0: never): a master stays master that long once
/// it stops renewing, in whole seconds, at least 2 (etcd's least); 30
/// where `dead_after` is 0.
std::chrono::seconds LeaseFor(double dead_after);

class MasterKey {
 public:
  /// `endpoint`: etcd's "host:port" (--rdzv_endpoint); `rdzv_id`: the
  /// job's name in etcd (--rdzv_id), so that jobs can share one etcd;
  /// `timeout`: the most one request to etcd takes.
  MasterKey(std::string endpoint, const std::string& rdzv_id,
            std::chrono::milliseconds timeout);
  /// Revokes this process's lease, if it holds one: the job ended here.
  ~MasterKey();
  MasterKey(const MasterKey&) = delete;
  MasterKey& operator=(const MasterKey&) = delete;

  /// Tries once to become the master: creates the key, with no address
  /// yet, under a new lease of `ttl` (whole seconds, at least 2). True:
  /// this process is master from now on (term() says its term), and a
  /// thread renews the lease every third of `ttl`; when a renewal finds
  /// it expired (this process was stopped, or cut off from etcd, for
  /// `ttl`), it calls `on_lost` once, on that thread, with a line naming
  /// the term. False: another process holds the key. Errors: those of
  /// EtcdClient.
  Result<bool> Campaign(std::chrono::seconds ttl,
                        std::function<void(const Status&)> on_lost);
  /// The master only: says where it listens ("host:port"). kUnavailable
  /// where the key is no longer this process's.
  Status Announce(const std::string& address);

  struct Master {
    std::string address;  // "host:port"
    int64_t term = 0;
  };
  /// Where the master listens: the first announced address other than
  /// `lost` (one whose master is gone, "": none) within `wait`, else the
  /// announced one, `lost` included. kUnavailable where no master has
  /// announced one within `wait`.
  Result<Master> Find(std::chrono::milliseconds wait,
                      const std::string& lost = "");

  /// This process's term as master; 0 before it won one.
  int64_t term() const { return term_; }
  /// This host's address toward etcd (EtcdClient::local_address).
  std::string local_address() const { return client_.local_address(); }

 private:
  void Renew(std::chrono::seconds ttl, std::function<void(const Status&)> lost);

  std::string key_;
  std::string endpoint_;
  std::chrono::milliseconds timeout_;
  EtcdClient client_;
  int64_t lease_ = 0;
  std::atomic<int64_t> term_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread renewer_;
};

}  // namespace pstrain::rdzv
