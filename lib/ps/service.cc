#include "ps/service.h"

#include <algorithm>
#include <sstream>

#include <ATen/ATen.h>

#include "ps/service_peer.h"
#include "ps/tensor_codec.h"

namespace pstrain::ps {

namespace {

// Before its hello a peer is unknown; it may not make us allocate much.
constexpr uint64_t kMaxFrameBeforeHello = 64 * 1024;

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream s;
  s << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) s << (i ? ", " : "") << ranks[i];
  return s.str();
}

}  // namespace

Service::Service(asio::io_context* io, const JobSpec& spec,
                 std::vector<wire::KeySpec> fingerprint, ParameterServer* server,
                 report::EventLog* log, ServiceOptions options)
    : io_(io),
      spec_(spec),
      fingerprint_(std::move(fingerprint)),
      server_(server),
      log_(log),
      options_(options),
      listener_(io, this, net::ConnectionOptions{options.max_frame_bytes},
                [this](std::shared_ptr<net::Connection> conn) {
                  auto peer = std::make_unique<Peer>();
                  peer->conn = conn;
                  peer->auth = net::AuthGate(options_.auth_token);
                  peers_[conn.get()] = std::move(peer);
                }),
      timer_(*io),
      step_timer_(*io) {
  workers_.assign(spec_.num_workers(), nullptr);
  clocks_.assign(spec_.num_workers(), 0);
  done_workers_.assign(spec_.num_workers(), false);
  lost_.assign(spec_.num_workers(), false);
  for (int k = 0; k < server_->num_keys(); ++k) {
    params_msg_.params.push_back(DescribeTensor(k, server_->params()[k]));
  }
  server_->set_step_by_key(true);  // see OnNewVersion
  step_gate_.OpenTo(net::SendGate::kAll);
}

Service::~Service() = default;

Status Service::Listen() { return listener_.Listen(options_.host, options_.port); }

Status Service::Run() {
  last_progress_ = Clock::now();
  Tick();
  io_->run();
  server_->StepAllKeys();  // what is saved after Run is whole
  return failure_;
}

void Service::Tick() {
  if (stopping_) return;
  CreditStall();
  CheckSilentWorkers();
  if (Clock::now() - last_progress_ > options_.timeout) {
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout);
    return Fail(Timeout("timed out after " + std::to_string(secs.count()) +
                        " s waiting for " + Waiting()));
  }
  DropStalledPeers();
  timer_.expires_after(kTick);
  timer_.async_wait([this](const std::error_code& ec) {
    if (!ec) Tick();
  });
}

// A tick later than it should be means this thread was busy with something
// of its own (or the process was held up), and the frames that came in
// meanwhile are still unread: that time is nobody's silence.
void Service::CreditStall() {
  const auto now = Clock::now();
  if (last_tick_ != Clock::time_point{} && now - last_tick_ > 2 * kTick) {
    const auto late = now - last_tick_ - kTick;
    for (auto& [conn, peer] : peers_) {
      peer->last_heard += late;
      peer->accepted_at += late;
    }
    last_progress_ += late;
  }
  last_tick_ = now;
}

// Every read and write is asynchronous, so a stalled peer blocks no one; it
// is dropped here so that it holds no connection (and no memory) for ever.
void Service::DropStalledPeers() {
  const auto now = Clock::now();
  const auto secs =
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(options_.timeout).count());
  std::vector<std::pair<net::Connection*, Status>> drop;
  for (const auto& [conn, peer] : peers_) {
    if (conn->closed()) continue;
    if (conn->StalledFor(now, options_.timeout)) {
      drop.emplace_back(conn, Timeout("a frame stalled mid-way for more than " +
                                      secs + " s"));
    } else if (peer->stage == Peer::Stage::kNew &&
               now - peer->accepted_at > options_.timeout) {
      drop.emplace_back(conn, Timeout("no handshake within " + secs + " s"));
    }
  }
  for (auto& [conn, why] : drop) conn->CloseWith(why);
}

std::string Service::Waiting() const {
  std::vector<int> missing;
  for (int s = 1; plan_ && s < spec_.num_servers; ++s) {
    if (server_addrs_[s].empty()) missing.push_back(s);
  }
  for (int w = 0; w < spec_.num_workers(); ++w) {
    if (!workers_[w]) missing.push_back(w + spec_.num_servers);
  }
  if (!missing.empty()) return RankList(missing) + " to connect";
  if (spec_.mode == Mode::kSync) {
    for (int w : server_->MissingPushes()) {
      if (workers_[w]->stage != Peer::Stage::kDone) {
        missing.push_back(w + spec_.num_servers);
      }
    }
    if (!missing.empty()) {
      return RankList(missing) + " to push version " +
             std::to_string(server_->version());
    }
  }
  for (int w = 0; w < spec_.num_workers(); ++w) {
    if (workers_[w]->stage != Peer::Stage::kDone) {
      missing.push_back(w + spec_.num_servers);
    }
  }
  if (!missing.empty()) return RankList(missing) + " to finish";
  for (int s = 1; plan_ && s < spec_.num_servers; ++s) {
    if (!servers_[s] || !servers_[s]->shard_in) missing.push_back(s);
  }
  return RankList(missing) + " to send its parameters";
}

// Before a peer has proven the token and said hello, only small frames of
// the expected type are read at all.
Status Service::OnHeader(net::Connection& conn, const wire::FrameHeader& header) {
  Peer& peer = *peers_.at(&conn);
  if (!peer.auth.open()) return peer.auth.CheckFrame(header.type, header.body_len, 0);
  if (peer.stage == Peer::Stage::kNew) {
    if (header.type != wire::MsgType::kHello) {
      return Corruption(std::string("expected hello first, got ") +
                        wire::MsgTypeName(header.type));
    }
    if (header.body_len > kMaxFrameBeforeHello) {
      return Corruption("hello of " + std::to_string(header.body_len) +
                        " bytes, expected at most " +
                        std::to_string(kMaxFrameBeforeHello));
    }
  }
  return Status::Ok();
}

Status Service::OnMeta(net::Connection& conn, const wire::FrameHeader& header,
                       std::string_view meta, uint64_t data_bytes,
                       std::vector<asio::mutable_buffer>* dst) {
  Peer& peer = *peers_.at(&conn);
  if (!peer.auth.open()) {
    return peer.auth.CheckFrame(header.type, header.body_len, data_bytes);
  }
  if (header.type == wire::MsgType::kShard) return PlanShard(peer, meta, dst);
  const bool push_pull = header.type == wire::MsgType::kPushPull;
  if (!push_pull && header.type != wire::MsgType::kPush) {
    if (data_bytes != 0) {
      return Corruption(std::string(wire::MsgTypeName(header.type)) +
                        " carries " + std::to_string(data_bytes) +
                        " data bytes, expected none");
    }
    return Status::Ok();
  }
  return PlanPush(conn, peer, header.type, meta, dst);
}

void Service::OnFrame(net::Connection& conn, const wire::FrameHeader& header,
                      std::string_view meta) {
  Peer& peer = *peers_.at(&conn);
  peer.last_heard = Clock::now();
  Status s = HandleFrame(peer, header, meta);
  if (!s.ok()) {
    log_->Info("refused " + std::string(wire::MsgTypeName(header.type)) +
               " from " + (peer.rank >= 0 ? "rank " + std::to_string(peer.rank)
                                          : conn.remote()) +
               ": " + s.message());
    conn.SendErrorAndClose(header.request_id, s);
  }
}

Status Service::HandleFrame(Peer& peer, const wire::FrameHeader& header,
                            std::string_view meta) {
  const uint64_t id = header.request_id;
  using T = wire::MsgType;
  if (!peer.auth.open()) return OnAuth(peer, header, meta);
  if (header.type == T::kHello) return OnHello(peer, id, meta);
  if (peer.stage == Peer::Stage::kNew) return InvalidArgument("hello expected");
  switch (header.type) {
    case T::kGetJob: return OnGetJob(peer, id);
    case T::kServerInfo: return OnServerInfo(peer, id, meta);
    case T::kShard: return OnShard(peer, id);
    case T::kHeartbeat: return Status::Ok();  // OnFrame noted the time
    case T::kRegister: return OnRegister(peer, id, meta);
    case T::kPull: return OnPull(peer, id, meta);
    case T::kPushPull:
    case T::kPush: return OnPush(peer, id);
    case T::kDone: return OnDone(peer, id, meta);
    case T::kSnapshot: return OnSnapshot(peer, id, meta);
    default:
      return InvalidArgument(std::string("unexpected ") +
                             wire::MsgTypeName(header.type));
  }
}

Status Service::OnHello(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kNew) return InvalidArgument("second hello");
  wire::Hello hello;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &hello));
  PS_RETURN_IF_ERROR(CheckRank(hello));
  const int rank = static_cast<int>(hello.rank);
  for (const auto& [c, other] : peers_) {
    if (hello.role == wire::Role::kTool) break;  // rank 0's observer, again
    if (other.get() != &peer && other->rank == rank && !c->closed() && !other->tool) {
      return InvalidArgument("rank " + std::to_string(rank) +
                             " is already connected from " + c->remote());
    }
  }
  peer.rank = rank;
  peer.stage = Peer::Stage::kHello;
  peer.conn->peer = rank;
  if (hello.role == wire::Role::kServer) {
    peer.server = rank;
    servers_[rank] = &peer;
    last_progress_ = Clock::now();
  } else if (hello.role == wire::Role::kTool) {
    peer.tool = true;
  } else {
    peer.worker = rank - spec_.num_servers;
  }
  wire::Hello reply{wire::Role::kServer, 0,
                    static_cast<uint32_t>(spec_.world_size)};
  wire::EncodeMeta(reply, &peer.meta);
  Reply(peer, wire::MsgType::kHello, id);
  return Status::Ok();
}

// Workers may join any server; other servers only rank 0 (ExpectServers);
// a tool only as rank 0 (the master's observer, which asks for snapshots).
Status Service::CheckRank(const wire::Hello& hello) const {
  const bool server = hello.role == wire::Role::kServer && plan_ != nullptr;
  const bool tool = hello.role == wire::Role::kTool;
  if (hello.role != wire::Role::kWorker && !server && !tool) {
    return InvalidArgument(std::string("a ") + wire::RoleName(hello.role) +
                           " cannot join; expected a worker");
  }
  if (static_cast<int>(hello.world_size) != spec_.world_size) {
    return Incompatible("--world_size mismatch: rank " +
                        std::to_string(hello.rank) + " has " +
                        std::to_string(hello.world_size) +
                        ", the server (rank 0) has " +
                        std::to_string(spec_.world_size));
  }
  const int rank = static_cast<int>(hello.rank);
  if (tool) {
    if (rank == 0) return Status::Ok();
    return InvalidArgument("a tool may join only as rank 0, not " + std::to_string(rank));
  }
  const int first = server ? 1 : spec_.num_servers;
  const int end = server ? spec_.num_servers : spec_.world_size;
  if (rank < first || rank >= end) {
    return InvalidArgument("--rank " + std::to_string(rank) + " is not a " +
                           wire::RoleName(hello.role) + " rank of --world_size " +
                           std::to_string(spec_.world_size) + " --num_servers " +
                           std::to_string(spec_.num_servers) + " (expected " +
                           std::to_string(first) + ".." + std::to_string(end - 1) +
                           ")");
  }
  return Status::Ok();
}

Status Service::OnRegister(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kHello) return InvalidArgument("second register");
  if (peer.worker < 0) return InvalidArgument("register from a server");
  wire::Register reg;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &reg));
  PS_RETURN_IF_ERROR(CompareFingerprints(fingerprint_, reg.keys));
  if (workers_[peer.worker] != nullptr || done_workers_[peer.worker]) {
    return InvalidArgument("rank " + std::to_string(peer.rank) +
                           " has already registered");
  }
  if (lost_[peer.worker]) PS_RETURN_IF_ERROR(Rejoin(peer));
  peer.stage = Peer::Stage::kRegistered;
  workers_[peer.worker] = &peer;
  if (registered_++ == 0) first_register_ = Clock::now();
  last_progress_ = Clock::now();
  log_->Info("rank " + std::to_string(peer.rank) + " joined from " +
             peer.conn->remote());
  peer.meta.clear();
  wire::EncodeMeta(wire::Ack{}, &peer.meta);
  Reply(peer, wire::MsgType::kAck, id);
  return Status::Ok();
}

Status Service::OnDone(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kRegistered) {
    return InvalidArgument("done before register");
  }
  wire::Done done;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &done));
  auto stats = nlohmann::json::parse(done.json, nullptr, false);
  if (stats.is_discarded() || !stats.is_object()) {
    return Corruption("done: stats are not a JSON object");
  }
  stats["rank"] = peer.rank;
  stats["waiting_seconds"] = peer.waiting_seconds;
  worker_stats_.push_back(stats);
  peer.stage = Peer::Stage::kDone;
  done_workers_[peer.worker] = true;
  LeaveQuorum(peer.worker);
  ReleaseReplies();  // a finished worker no longer holds the others back
  last_progress_ = last_done_ = Clock::now();
  peer.meta.clear();
  wire::EncodeMeta(wire::Ack{}, &peer.meta);
  Reply(peer, wire::MsgType::kAck, id);
  ++done_;
  MaybeFinish();
  return Status::Ok();
}

Status Service::OnAuth(Peer& peer, const wire::FrameHeader& header,
                       std::string_view meta) {
  wire::MsgType reply = wire::MsgType::kAck;
  PS_RETURN_IF_ERROR(peer.auth.OnFrame(header.type, meta, &reply, &peer.meta));
  Reply(peer, reply, header.request_id);
  return Status::Ok();
}

void Service::Reply(Peer& peer, wire::MsgType type, uint64_t id) {
  net::FrameBuffers& frame = peer.conn->NewFrame();
  frame.Reset(type, id, peer.meta);
  peer.conn->Send(frame);
}

void Service::OnClose(net::Connection& conn, const Status& why) {
  auto it = peers_.find(&conn);
  if (it == peers_.end()) return;
  Peer& peer = *it->second;
  closed_bytes_read_ += conn.bytes_read();
  closed_bytes_written_ += conn.bytes_written();
  params_in_flight_ -= peer.params_in_flight;
  peer.params_in_flight = 0;
  deferred_.erase(std::remove_if(deferred_.begin(), deferred_.end(),
                                 [&](const Deferred& d) { return d.peer == &peer; }),
                  deferred_.end());
  if (params_in_flight_ == 0 && !deferred_.empty()) {
    asio::post(*io_, [this] {
      if (params_in_flight_ == 0) RunPending();
    });
  }
  if (peer.stage == Peer::Stage::kRegistered && !stopping_) {
    LoseWorker(peer, why);
  } else if (peer.server > 0 && !peer.shard_in && !stopping_) {
    Fail(Unavailable("rank " + std::to_string(peer.rank) +
                     " (server) disconnected before sending its parameters" +
                     (why.ok() ? "" : " (" + why.message() + ")")));
  } else if (!why.ok() && !stopping_) {
    log_->Info("dropped connection from " + conn.remote() + ": " +
               why.ToString());
  }
  if (peer.worker >= 0 && workers_[peer.worker] == &peer) {
    workers_[peer.worker] = nullptr;
  }
  if (peer.server > 0 && servers_[peer.server] == &peer) {
    servers_[peer.server] = nullptr;
  }
  // The connection may still be inside its own callback; free it later.
  asio::post(*io_, [this, c = &conn] {
    peers_.erase(c);
    if (stopping_ && peers_.empty()) timer_.cancel();  // nothing left to wait for
  });
}

void Service::Fail(const Status& status) {
  if (stopping_) return;
  failure_ = status;
  for (auto& [c, peer] : peers_) {
    if (peer->stage != Peer::Stage::kNew) {
      c->SendErrorAndClose(peer->reply_pending ? peer->pending_id : 0, status);
    }
  }
  Shutdown();
}

void Service::Shutdown() {
  stopping_ = true;
  AbandonSnapshots();
  // An observer's connection waits for nothing more: it must not hold the
  // end of the run for the grace period below.
  std::vector<net::Connection*> tools;
  for (auto& [c, peer] : peers_) {
    if (peer->tool && !c->closed()) tools.push_back(c);
  }
  for (auto* c : tools) c->Close();
  listener_.Close();
  timer_.cancel();
  step_timer_.cancel();
  // Give peers a moment to read their last reply, then close what is left.
  timer_.expires_after(std::chrono::seconds(5));
  timer_.async_wait([this](const std::error_code& ec) {
    if (ec) return;
    std::vector<net::Connection*> open;
    for (auto& [c, peer] : peers_) open.push_back(c);
    for (auto* c : open) c->Close();
  });
}

// Async and ssp pushes by staleness (server version minus the version the
// gradient was computed on): {"0": n0, "1": n1, ...}, empty buckets left out.
nlohmann::json Service::StalenessHistogram() const {
  nlohmann::json h = nlohmann::json::object();
  if (spec_.mode == Mode::kSync) return h;
  const auto& counts = server_->staleness_histogram();
  for (size_t s = 0; s < counts.size(); ++s) {
    if (counts[s] > 0) h[std::to_string(s)] = counts[s];
  }
  return h;
}

nlohmann::json Service::Stats() const {
  uint64_t read = closed_bytes_read_, written = closed_bytes_written_;
  for (const auto& [c, peer] : peers_) {
    read += c->bytes_read();
    written += c->bytes_written();
  }
  double samples = 0, compute = 0, round_trips = 0, waiting = 0;
  for (const auto& s : worker_stats_) {
    samples += s.value("samples", 0.0);
    compute += s.value("compute_seconds", 0.0);
    round_trips += s.value("communication_seconds", 0.0);
    waiting += s.value("waiting_seconds", 0.0);
  }
  size_t n = std::max<size_t>(1, worker_stats_.size());
  double wall = registered_ == 0 ? 0.0
                                 : std::chrono::duration<double>(
                                       last_done_ - first_register_).count();
  if (plan_) {  // other servers carried most bytes: count the workers' own
    read = written = 0;
    for (const auto& s : worker_stats_) {
      read += s.value("bytes_pushed", uint64_t{0});
      written += s.value("bytes_pulled", uint64_t{0});
    }
  }
  return {{"bytes_pushed", read},
          {"bytes_pulled", written},
          {"num_servers", spec_.num_servers},
          {"shard_imbalance", plan_ ? plan_->imbalance() : 1.0},
          {"samples", samples},
          {"wall_seconds", wall},
          {"samples_per_second", wall > 0 ? samples / wall : 0.0},
          {"compute_seconds", compute / n},
          // A worker's round trips hold the time its reply waited for the
          // other workers; the server measured that part.
          {"communication_seconds", std::max(0.0, round_trips - waiting) / n},
          {"waiting_seconds", waiting / n},
          {"steps", server_->version()},
          {"dropped_pushes", server_->dropped_pushes()},
          {"workers_lost", workers_lost_},
          {"timed_out_steps", timed_out_steps_},
          {"max_clock_gap", max_clock_gap_},
          {"refused_pushes", refused_pushes_},
          {"discarded_steps", server_->discarded_steps()},
          {"staleness_histogram", StalenessHistogram()},
          {"workers", worker_stats_}};
}

}  // namespace pstrain::ps
