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
// (--rdzv_backend launch). Across machines it is etcd (--rdzv_backend
// etcd): the master holds a key there under a lease (rdzv/master_key.h),
// and whoever creates it once the lease lapsed is the next master; every
// rank finds the master's address there too. With --rdzv_backend static
// (the default) no one is ever named, and rank 0's death ends the job.
//
// Threading: Named may be called from any thread; the word itself comes
// in a signal handler.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "util/result.h"

namespace pstrain::ps {

class Succession {
 public:
  virtual ~Succession() = default;
  /// Whether the arbiter named this process master, waiting up to `wait`
  /// for its word (0: only whether it came already). Once true, true.
  /// `lease`: how long a master that stops renewing its claim stays
  /// master (the job's --dead_after), where the arbiter has leases.
  virtual bool Named(std::chrono::milliseconds wait,
                     std::chrono::seconds lease) = 0;

  /// Whether a process becomes master by its own act (etcd: it takes the
  /// key), so that only one able to serve rank 0's shard may try, rather
  /// than by another's word (launch).
  virtual bool Campaigns() const { return false; }

  /// Rank 0 at its start: claims the master's role for `lease` at a time.
  /// kUnavailable where another holds it (a master of the same job runs).
  virtual Status Lead(std::chrono::seconds /*lease*/) { return Status::Ok(); }
  /// The master, once it listens: tells the job where ("host:port").
  virtual Status Announce(const std::string& /*address*/) {
    return Status::Ok();
  }
  /// Where a master named by this arbiter listens: nullopt where it is
  /// the job's master address (launch: one machine), else this host's.
  virtual std::optional<std::string> ListenHost() { return std::nullopt; }
  /// Where the master listens now (rdzv::MasterKey::Find), preferring an
  /// address other than `lost`; nullopt where that is always the job's
  /// master address.
  virtual Result<std::optional<std::string>> FindMaster(
      std::chrono::milliseconds /*wait*/, const std::string& /*lost*/) {
    return std::optional<std::string>();
  }
  /// Called once, on a thread of the arbiter's, when this process learns
  /// it is master no more (its lease lapsed): it must stop serving. Set
  /// it before Lead or Named.
  virtual void set_on_lost(std::function<void(const Status&)> /*on_lost*/) {}
};

/// --rdzv_backend and what goes with it.
struct RdzvOptions {
  std::string backend = "static";  // static, launch or etcd
  std::string endpoint;            // etcd: "host:port" (--rdzv_endpoint)
  std::string id = "none";         // etcd: the job's name (--rdzv_id)
  std::chrono::milliseconds timeout{120000};  // one request to etcd
};

/// static: nullptr (no succession). launch: a Succession named by SIGUSR1
/// from launch; its handler is installed here, so call it before launch
/// may send the word. etcd: one that campaigns for the job's master key
/// (ps/rank/etcd_succession.h). kInvalidArgument naming --rdzv_backend
/// for any other value, or --rdzv_endpoint where etcd has none.
Result<std::unique_ptr<Succession>> MakeSuccession(const RdzvOptions& rdzv);

/// Where the master listens now, in `*host` and `*port`, which hold the
/// job's master address on entry: left so where `succession` is nullptr
/// or says it is always that (launch); else where it says (etcd), waiting
/// up to `wait` for an address other than `lost` ("host:port" of a master
/// that is gone; "": any). Errors: the arbiter's (kUnavailable where no
/// master said where it listens within `wait`), kInvalidArgument for an
/// address that is no "host:port".
Status FindMaster(Succession* succession, std::chrono::milliseconds wait,
                  const std::string& lost, std::string* host, int* port);

/// FindMaster, for a rank that starts (or starts again) while a master may
/// have just died: an address where nothing listens (a dead master's, its
/// lease not yet lapsed) is passed over for the next the arbiter names,
/// until `timeout`. kUnavailable naming the last address tried then.
Status FindLiveMaster(Succession* succession, std::chrono::milliseconds timeout,
                      std::string* host, int* port);

}  // namespace pstrain::ps
