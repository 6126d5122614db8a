#pragma once
// ServerRoster: rank 0's view of servers 1..S-1 in a job of several
// servers. Rank 0 is the one address every process knows, so the other
// servers tell it where they listen (server_info), workers learn those
// addresses from it with the job spec, and at the end each server sends
// it its slices (shard) so that one process holds, scores and saves the
// whole model. The roster keeps each server's connection, address and
// final optimizer state, and where its slices land in the model.
//
// A job of one server expects no other: every question about them is
// answered as if all had done their part.
//
// Threading: not thread-safe; the Engine's thread only. It borrows each
// server's ServerPeer from Hello until Disconnect.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/engine/outbox.h"
#include "ps/job/shard_plan.h"
#include "util/result.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct ServerPeer;

class ServerRoster {
 public:
  ServerRoster() = default;
  ServerRoster(const ServerRoster&) = delete;
  ServerRoster& operator=(const ServerRoster&) = delete;

  /// Expects servers 1..num_servers-1, whose final slices land in
  /// `model_params` (the whole model's parameters, key order, contiguous)
  /// as `plan` places them. `plan` must outlive the roster.
  /// REQUIRES: before any server says hello.
  void Expect(const ShardPlan* plan, int num_servers,
              std::vector<at::Tensor> model_params);
  /// Whether other servers are expected (Expect was called).
  bool expecting() const { return plan_ != nullptr; }
  /// The plan Expect got; null when expecting none.
  const ShardPlan* plan() const { return plan_; }
  /// "host:port" where rank 0 listens, for the workers.
  void set_own_address(std::string address) {
    own_address_ = std::move(address);
  }

  /// Server s's connection said hello. REQUIRES: expecting(),
  /// 0 < s < num_servers.
  void Hello(int s, ServerPeer* peer);
  /// `peer` (server s's connection) closed.
  void Disconnect(int s, const ServerPeer* peer);

  /// Server s listens at `address` ("host:port"). kInvalidArgument for a
  /// second one or an address with no port.
  Status Announce(int s, const std::string& address);
  /// Every other server has said where it listens (true when expecting
  /// none).
  bool all_announced() const { return announced_ == others(); }
  /// Where each server listens, by server index: [0] is rank 0's own.
  std::vector<std::string> addresses() const;
  /// Where server s listens; "" until it said (and for s = 0).
  const std::string& address(int s) const { return addresses_[s]; }

  /// Where `peer`'s final slices go (its shard message `meta`): appended
  /// to `buffers`, one per slice (views of the model's parameters) and
  /// last its optimizer state's bytes. kInvalidArgument for a second
  /// shard, kCorruption for descriptors that do not match the plan.
  Status PlanShard(ServerPeer& peer, std::string_view meta,
                   std::vector<MutableSpan>* buffers);
  /// `peer`'s shard is all in.
  void ShardIn(ServerPeer& peer);
  /// Every other server's slices are in (true when expecting none).
  bool all_shards_in() const { return shards_ == others(); }
  /// Server s's optimizer state as its shard carried it
  /// (SerializeOptimizerState bytes); "" until then.
  const std::string& optimizer_state(int s) const {
    return optimizer_states_[s];
  }

  /// --replicas: server s's connection closed before its final shard, at
  /// `now`: it is not announced until a standby that takes its shard over
  /// says where it listens (Announce), so workers asking for the job wait
  /// for that address.
  void Lose(int s, Time now);
  /// Whether server s's connection said hello, or it said where it
  /// listens, since Expect (it is lost since, maybe).
  bool heard(int s) const {
    return servers_[s] != nullptr || !addresses_[s].empty();
  }
  /// Whether server s is lost and not taken over.
  bool lost(int s) const { return lost_at_[s].has_value(); }
  /// A server lost before `deadline` whose shard nobody took over, or -1.
  int LostBefore(Time deadline) const;
  /// A standby on server rank `process` took lost shard s over at `now`
  /// (its claim won): s's server_info is waited for from `now` on.
  void Claimed(int s, int process, Time now);
  /// Whether rank 0 sees server rank `process` alive: it is rank 0, or it
  /// serves some shard over a connection that is open (its own, or one it
  /// took over). A rank started again with --rejoin serves none, and is
  /// not seen until its standby claims.
  bool alive(int process) const;
  /// Server s's term: 1 for the rank that started as s, one more for each
  /// standby that took its shard over since. A rank serving s with an
  /// older term has been fenced (MasterDesk::FenceSilent).
  uint64_t term(int s) const { return terms_[s]; }
  /// The rank whose process serves server s's shard now.
  int process(int s) const { return process_[s]; }
  /// Whether server s's final shard is in.
  bool shard_in(int s) const {
    return s > 0 && s < static_cast<int>(shard_in_.size()) && shard_in_[s];
  }

  /// Ranks of the servers that have not said where they listen.
  std::vector<int> MissingAddresses() const;
  /// Ranks of the servers whose slices are not in (or whose connection
  /// is gone).
  std::vector<int> MissingShards() const;

 private:
  int others() const {
    return addresses_.empty() ? 0 : static_cast<int>(addresses_.size()) - 1;
  }

  const ShardPlan* plan_ = nullptr;
  std::vector<at::Tensor> model_params_;
  std::string own_address_;
  std::vector<std::string> addresses_;  // by server index; [0]: ""
  std::vector<ServerPeer*> servers_;    // by server index; null until hello
  std::vector<int> process_;            // by server index: the rank serving it
  std::vector<uint64_t> terms_;         // by server index: see term()
  int announced_ = 0;                   // servers with an address
  int shards_ = 0;                      // servers whose slices are in
  wire::Shard shard_msg_;               // reused
  std::vector<std::string> optimizer_states_;  // by server index
  std::vector<bool> shard_in_;                 // by server index
  std::vector<std::optional<Time>> lost_at_;   // by server index
};

}  // namespace pstrain::ps
