#include "ps/service.h"

#include <algorithm>
#include <sstream>

#include <ATen/ATen.h>

#include "ps/tensor_codec.h"

namespace pstrain::ps {

using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kTick = std::chrono::milliseconds(200);
// Before its hello a peer is unknown; it may not make us allocate much.
constexpr uint64_t kMaxFrameBeforeHello = 64 * 1024;
// Sync pushes stream through a chunk of this many bytes per connection and
// are added into the accumulators piece by piece.
constexpr uint64_t kChunkBytes = ParameterServer::kPieceBytes;

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream s;
  s << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) s << (i ? ", " : "") << ranks[i];
  return s.str();
}

}  // namespace

struct Service::Peer {
  enum class Stage { kNew, kHello, kRegistered, kDone };
  std::shared_ptr<net::Connection> conn;
  Stage stage = Stage::kNew;
  int rank = -1;
  int worker = -1;  // worker index: rank - num_servers
  // A pull (or the pull half of a push_pull) waiting for a version.
  bool reply_pending = false;
  uint64_t pending_id = 0;
  uint64_t pending_min_version = 0;
  Clock::time_point pending_since;
  double waiting_seconds = 0;        // replies held for other workers
  wire::PushPull push;               // reused for every push_pull
  wire::Push push_only;              // reused for every push
  bool push_is_push_pull = false;
  int params_in_flight = 0;          // params frames not yet written
  struct Piece {
    int key;
    uint64_t offset, bytes;
  };
  std::vector<char> chunk;           // sync: where pushed bytes land
  std::vector<Piece> pieces;         // sync: what each chunk-full holds
  std::string meta;                  // reused encode buffer
};

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
                  peers_[conn.get()] = std::move(peer);
                }),
      timer_(*io) {
  workers_.assign(spec_.num_workers(), nullptr);
  for (int k = 0; k < server_->num_keys(); ++k) {
    params_msg_.params.push_back(DescribeTensor(k, server_->params()[k]));
  }
}

Service::~Service() = default;

Status Service::Listen() { return listener_.Listen(options_.host, options_.port); }

Status Service::Run() {
  last_progress_ = Clock::now();
  Tick();
  io_->run();
  return failure_;
}

void Service::Tick() {
  if (stopping_) return;
  if (Clock::now() - last_progress_ > options_.timeout) {
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout);
    return Fail(Timeout("timed out after " + std::to_string(secs.count()) +
                        " s waiting for " + Waiting()));
  }
  timer_.expires_after(kTick);
  timer_.async_wait([this](const std::error_code& ec) {
    if (!ec) Tick();
  });
}

std::string Service::Waiting() const {
  std::vector<int> missing;
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
  return RankList(missing) + " to finish";
}

Status Service::OnMeta(net::Connection& conn, const wire::FrameHeader& header,
                       std::string_view meta, uint64_t data_bytes,
                       std::vector<asio::mutable_buffer>* dst) {
  Peer& peer = *peers_.at(&conn);
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
  const bool push_pull = header.type == wire::MsgType::kPushPull;
  if (!push_pull && header.type != wire::MsgType::kPush) {
    if (data_bytes != 0) {
      return Corruption(std::string(wire::MsgTypeName(header.type)) +
                        " carries " + std::to_string(data_bytes) +
                        " data bytes, expected none");
    }
    return Status::Ok();
  }
  const char* what = wire::MsgTypeName(header.type);
  if (peer.stage != Peer::Stage::kRegistered) {
    return InvalidArgument(std::string(what) + " before register");
  }
  peer.push_is_push_pull = push_pull;
  if (push_pull) {
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.push));
  } else {
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.push_only));
  }
  const auto& grads = push_pull ? peer.push.grads : peer.push_only.grads;
  if (grads.size() != static_cast<size_t>(server_->num_keys())) {
    return Corruption(std::string(what) + " carries " +
                      std::to_string(grads.size()) + " tensors, expected " +
                      std::to_string(server_->num_keys()));
  }
  const auto& params = server_->params();
  for (int k = 0; k < server_->num_keys(); ++k) {
    PS_RETURN_IF_ERROR(CheckDescMatches(grads[k], k, params[k], what));
  }
  const uint64_t version = push_pull ? peer.push.version : peer.push_only.version;
  PS_RETURN_IF_ERROR(server_->CheckPush(peer.worker, version));
  if (server_->mode() == Mode::kAsync) {
    for (const auto& g : server_->grad_buffer(peer.worker)) {
      dst->emplace_back(g.data_ptr(), g.nbytes());
    }
    return Status::Ok();
  }
  PlanPieces(peer, dst);
  conn.ReadPieceByPiece();
  return Status::Ok();
}

// Sync: every key's bytes go through the peer's chunk, a chunk-full at a
// time, each added into the accumulator as soon as it is in (OnPiece).
void Service::PlanPieces(Peer& peer, std::vector<asio::mutable_buffer>* dst) {
  uint64_t total = 0;
  for (const auto& p : server_->params()) total += p.nbytes();
  if (peer.chunk.size() < std::min(total, kChunkBytes)) {
    peer.chunk.resize(std::min(total, kChunkBytes));
  }
  peer.pieces.clear();
  const auto& params = server_->params();
  for (int k = 0; k < server_->num_keys(); ++k) {
    const uint64_t nbytes = params[k].nbytes();
    for (uint64_t off = 0; off < nbytes; off += kChunkBytes) {
      const uint64_t n = std::min(kChunkBytes, nbytes - off);
      peer.pieces.push_back({k, off, n});
      dst->emplace_back(peer.chunk.data(), n);
    }
  }
}

void Service::OnPiece(net::Connection& conn, size_t index) {
  Peer& peer = *peers_.at(&conn);
  const Peer::Piece& piece = peer.pieces[index];
  server_->Accumulate(piece.key, piece.offset, peer.chunk.data(), piece.bytes);
}

void Service::OnFrame(net::Connection& conn, const wire::FrameHeader& header,
                      std::string_view meta) {
  Peer& peer = *peers_.at(&conn);
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
  if (header.type == T::kHello) return OnHello(peer, id, meta);
  if (peer.stage == Peer::Stage::kNew) return InvalidArgument("hello expected");
  switch (header.type) {
    case T::kGetJob: {
      wire::JobSpecMsg msg{ToJson(spec_).dump()};
      wire::EncodeMeta(msg, &peer.meta);
      Reply(peer, T::kJobSpec, id);
      return Status::Ok();
    }
    case T::kRegister: return OnRegister(peer, id, meta);
    case T::kPull: return OnPull(peer, id, meta);
    case T::kPushPull:
    case T::kPush: return OnPush(peer, id);
    case T::kDone: return OnDone(peer, id, meta);
    default:
      return InvalidArgument(std::string("unexpected ") +
                             wire::MsgTypeName(header.type));
  }
}

Status Service::OnHello(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kNew) return InvalidArgument("second hello");
  wire::Hello hello;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &hello));
  if (hello.role != wire::Role::kWorker) {
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
  int rank = static_cast<int>(hello.rank);
  if (rank < spec_.num_servers || rank >= spec_.world_size) {
    return InvalidArgument("--rank " + std::to_string(rank) +
                           " is not a worker rank of --world_size " +
                           std::to_string(spec_.world_size) + " (expected " +
                           std::to_string(spec_.num_servers) + ".." +
                           std::to_string(spec_.world_size - 1) + ")");
  }
  for (const auto& [c, other] : peers_) {
    if (other.get() != &peer && other->rank == rank && !c->closed()) {
      return InvalidArgument("rank " + std::to_string(rank) +
                             " is already connected from " + c->remote());
    }
  }
  peer.rank = rank;
  peer.worker = rank - spec_.num_servers;
  peer.stage = Peer::Stage::kHello;
  peer.conn->peer = rank;
  wire::Hello reply{wire::Role::kServer, 0,
                    static_cast<uint32_t>(spec_.world_size)};
  wire::EncodeMeta(reply, &peer.meta);
  Reply(peer, wire::MsgType::kHello, id);
  return Status::Ok();
}

Status Service::OnRegister(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kHello) return InvalidArgument("second register");
  wire::Register reg;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &reg));
  PS_RETURN_IF_ERROR(CompareFingerprints(fingerprint_, reg.keys));
  if (workers_[peer.worker] != nullptr) {
    return InvalidArgument("rank " + std::to_string(peer.rank) +
                           " has already registered");
  }
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

Status Service::OnPull(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kRegistered) {
    return InvalidArgument("pull before register");
  }
  wire::Pull pull;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &pull));
  return AwaitVersion(peer, id, pull.min_version);
}

// A reply of parameters once the server's version reaches `min_version`.
Status Service::AwaitVersion(Peer& peer, uint64_t id, uint64_t min_version) {
  if (peer.reply_pending) return InvalidArgument("a pull is already pending");
  if (server_->version() >= min_version) {
    SendParams(peer, id);
    return Status::Ok();
  }
  peer.reply_pending = true;
  peer.pending_id = id;
  peer.pending_min_version = min_version;
  peer.pending_since = Clock::now();
  return Status::Ok();
}

Status Service::OnPush(Peer& peer, uint64_t id) {
  if (params_in_flight_ > 0) {
    // Parameters are being written straight from their storage; stepping
    // now would change bytes on their way out. Apply once the writes end.
    deferred_.push_back({&peer, id});
    return Status::Ok();
  }
  auto stepped = Step(peer);
  if (!stepped.ok()) return stepped.status();
  if (*stepped) OnNewVersion();
  AnswerPush(peer, id);
  return Status::Ok();
}

Result<bool> Service::Step(Peer& peer) {
  const uint64_t version =
      peer.push_is_push_pull ? peer.push.version : peer.push_only.version;
  if (spec_.mode == Mode::kAsync) last_progress_ = Clock::now();
  return server_->Push(peer.worker, version);
}

void Service::AnswerPush(Peer& peer, uint64_t id) {
  if (!peer.push_is_push_pull) {
    peer.meta.clear();
    Reply(peer, wire::MsgType::kAck, id);
    return;
  }
  // Sync: the parameters this push helps to make; async: the current ones.
  const uint64_t version = peer.push.version;
  Status s = AwaitVersion(peer, id, spec_.mode == Mode::kSync ? version + 1 : 0);
  if (!s.ok()) peer.conn->SendErrorAndClose(id, s);
}

// Applies the pushes that waited for parameter writes: all steps first, then
// all answers, so no step changes parameters that an answer is sending.
void Service::RunDeferred() {
  std::vector<Deferred> batch;
  batch.swap(deferred_);
  bool stepped = false;
  for (Deferred& d : batch) {
    auto s = Step(*d.peer);
    if (!s.ok()) {
      d.peer->conn->SendErrorAndClose(d.id, s.status());
      d.peer = nullptr;
      continue;
    }
    stepped = stepped || *s;
  }
  if (stepped) OnNewVersion();
  for (Deferred& d : batch) {
    if (d.peer) AnswerPush(*d.peer, d.id);
  }
}

void Service::OnWritten(net::Connection& conn, wire::MsgType type) {
  if (type != wire::MsgType::kParams) return;
  auto it = peers_.find(&conn);
  if (it == peers_.end() || it->second->params_in_flight == 0) return;
  --it->second->params_in_flight;
  if (--params_in_flight_ == 0 && !deferred_.empty()) RunDeferred();
}

void Service::OnNewVersion() {
  last_progress_ = Clock::now();
  if (on_version_) on_version_(server_->version());
  for (Peer* p : workers_) {
    if (p && p->reply_pending && server_->version() >= p->pending_min_version) {
      p->reply_pending = false;
      p->waiting_seconds +=
          std::chrono::duration<double>(Clock::now() - p->pending_since).count();
      SendParams(*p, p->pending_id);
    }
  }
}

void Service::SendParams(Peer& peer, uint64_t id) {
  if (peer.conn->closed()) return;
  params_msg_.version = server_->version();
  wire::EncodeMeta(params_msg_, &peer.meta);
  net::FrameBuffers& frame = peer.conn->NewFrame();
  frame.Reset(wire::MsgType::kParams, id, peer.meta);
  for (const auto& t : server_->params()) frame.AddData(t.data_ptr(), t.nbytes());
  ++peer.params_in_flight;
  ++params_in_flight_;
  peer.conn->Send(frame);
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
  last_progress_ = last_done_ = Clock::now();
  peer.meta.clear();
  wire::EncodeMeta(wire::Ack{}, &peer.meta);
  Reply(peer, wire::MsgType::kAck, id);
  if (++done_ == spec_.num_workers()) Shutdown();
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
      if (params_in_flight_ == 0 && !deferred_.empty()) RunDeferred();
    });
  }
  bool lost = peer.stage == Peer::Stage::kRegistered && !stopping_;
  if (lost) {
    Fail(Unavailable("rank " + std::to_string(peer.rank) +
                     " disconnected before finishing" +
                     (why.ok() ? "" : " (" + why.message() + ")")));
  } else if (!why.ok() && !stopping_) {
    log_->Info("dropped connection from " + conn.remote() + ": " +
               why.ToString());
  }
  if (peer.worker >= 0 && workers_[peer.worker] == &peer) {
    workers_[peer.worker] = nullptr;
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
  listener_.Close();
  timer_.cancel();
  // Give peers a moment to read their last reply, then close what is left.
  timer_.expires_after(std::chrono::seconds(5));
  timer_.async_wait([this](const std::error_code& ec) {
    if (ec) return;
    std::vector<net::Connection*> open;
    for (auto& [c, peer] : peers_) open.push_back(c);
    for (auto* c : open) c->Close();
  });
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
  return {{"bytes_pushed", read},
          {"bytes_pulled", written},
          {"samples", samples},
          {"wall_seconds", wall},
          {"samples_per_second", wall > 0 ? samples / wall : 0.0},
          {"compute_seconds", compute / n},
          // A worker's round trips hold the time its reply waited for the
          // other workers; the server measured that part.
          {"communication_seconds", std::max(0.0, round_trips - waiting) / n},
          {"waiting_seconds", waiting / n},
          {"steps", server_->version()},
          {"workers", worker_stats_}};
}

}  // namespace pstrain::ps
