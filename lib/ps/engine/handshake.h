#pragma once
// Handshake: how a connection becomes a peer the job trusts
// (share/doc/conversation.md): the token's proof (net/auth_gate.h), the
// hello that names its role and rank (checked against the job: the world
// size, the ranks each role may have, one connection per rank), the
// worker's register (its model's keys against the server's), the
// handshake's deadline, and the heartbeats that carry a worker's progress
// (ProgressFeed, progress_feed.h). A peer is typed by its role here
// (PeerTable::Become). What joining does to the job (a lost worker
// rejoining, a server entering the roster) the Engine sequences.
//
// Threading: not thread-safe; the Engine's thread only. The pointers given
// must outlive it.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "ps/engine/outbox.h"
#include "ps/engine/progress_feed.h"
#include "util/result.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct JobSpec;
struct KeyFormats;
class Membership;
class PeerTable;
class PeerWatch;
class ServerRoster;
struct Peer;
struct WorkerPeer;

class Handshake {
 public:
  /// `auth_token`: what every peer must prove it knows (empty: none).
  Handshake(const JobSpec& spec, std::string auth_token,
            const KeyFormats* formats, PeerTable* peers, const PeerWatch* watch,
            Outbox* outbox);
  Handshake(const Handshake&) = delete;
  Handshake& operator=(const Handshake&) = delete;

  /// See Engine::set_on_progress.
  void set_on_progress(ProgressFeed::Receiver fn) {
    progress_.set_receiver(std::move(fn));
  }
  /// A connection from `remote` opened at `now`.
  void Accept(PeerId id, std::string remote, Time now);
  /// A frame's header, before its meta: before the token's proof and the
  /// hello, only small frames of the expected type are read at all.
  Status CheckHeader(Peer& peer, const wire::FrameHeader& header) const;
  /// A frame before the token's proof: the proof, answered.
  Status OnAuth(Peer& peer, const wire::FrameHeader& header,
                std::string_view meta);
  /// A hello, checked: its role may join as its rank (`roster`: the other
  /// servers, on rank 0; `claiming`: the peer claimed a lost shard
  /// already). kInvalidArgument or kIncompatible saying why not.
  Result<wire::Hello> ReadHello(Peer& peer, std::string_view meta,
                                const ServerRoster& roster,
                                bool claiming) const;
  /// `peer` joins as `role` of rank `rank`, answering its hello `id`;
  /// returns its typed self (the old object is retired).
  Peer& Admit(Peer& peer, wire::Role role, int rank, uint64_t id);
  /// A register, checked: the worker that may register now.
  Result<WorkerPeer*> ReadRegister(Peer& peer, std::string_view meta,
                                   const Membership& members) const;
  /// A heartbeat: a registered worker's progress goes to the receiver; a
  /// server that beats is watched for silence (MasterDesk::FenceSilent).
  Status OnHeartbeat(Peer& peer, std::string_view meta);
  /// Closes every connection that has not finished its handshake within
  /// --timeout by `now`.
  void CloseLate(Time now);

 private:
  Status CheckRank(const wire::Hello& hello, bool expecting) const;

  const JobSpec& spec_;
  std::string auth_token_;
  const KeyFormats* formats_;
  PeerTable* peers_;
  const PeerWatch* watch_;
  Outbox* outbox_;
  ProgressFeed progress_;
};

}  // namespace pstrain::ps
