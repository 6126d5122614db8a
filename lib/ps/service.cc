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
  bool reply_pending = false;
  uint64_t pending_id = 0;
  wire::PushPull push;               // reused for every push
  std::vector<at::Tensor> snapshot;  // async: parameters as sent
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
  if (header.type != wire::MsgType::kPushPull) {
    if (data_bytes != 0) {
      return Corruption(std::string(wire::MsgTypeName(header.type)) +
                        " carries " + std::to_string(data_bytes) +
                        " data bytes, expected none");
    }
    return Status::Ok();
  }
  if (peer.stage != Peer::Stage::kRegistered) {
    return InvalidArgument("push_pull before register");
  }
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.push));
  if (peer.push.grads.size() != static_cast<size_t>(server_->num_keys())) {
    return Corruption("push_pull carries " +
                      std::to_string(peer.push.grads.size()) +
                      " tensors, expected " +
                      std::to_string(server_->num_keys()));
  }
  const auto& buffers = server_->grad_buffer(peer.worker);
  for (int k = 0; k < server_->num_keys(); ++k) {
    PS_RETURN_IF_ERROR(
        CheckDescMatches(peer.push.grads[k], k, buffers[k], "push_pull"));
    dst->emplace_back(buffers[k].data_ptr(), buffers[k].nbytes());
  }
  return Status::Ok();
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
    case T::kPull:
      if (peer.stage != Peer::Stage::kRegistered) {
        return InvalidArgument("pull before register");
      }
      SendParams(peer, id);
      return Status::Ok();
    case T::kPushPull: return OnPushPull(peer, id);
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

Status Service::OnPushPull(Peer& peer, uint64_t id) {
  if (peer.reply_pending) return InvalidArgument("push_pull while one is pending");
  auto closed = server_->Push(peer.worker, peer.push.version);
  if (!closed.ok()) return closed.status();
  if (spec_.mode == Mode::kAsync) last_progress_ = Clock::now();
  peer.reply_pending = true;
  peer.pending_id = id;
  if (*closed) OnNewVersion();
  return Status::Ok();
}

void Service::OnNewVersion() {
  last_progress_ = Clock::now();
  if (on_version_) on_version_(server_->version());
  // Sync: every worker waits for this version; async: only the pusher.
  for (Peer* p : workers_) {
    if (p && p->reply_pending) {
      p->reply_pending = false;
      SendParams(*p, p->pending_id);
    }
  }
}

void Service::SendParams(Peer& peer, uint64_t id) {
  const std::vector<at::Tensor>* source = &server_->params();
  if (spec_.mode == Mode::kAsync) {
    // Async versions change under a write in flight; send a stable copy.
    if (peer.snapshot.empty()) {
      for (const auto& p : *source) peer.snapshot.push_back(at::empty_like(p));
    }
    for (size_t k = 0; k < source->size(); ++k) {
      peer.snapshot[k].copy_((*source)[k].detach());
    }
    source = &peer.snapshot;
  }
  params_msg_.version = server_->version();
  wire::EncodeMeta(params_msg_, &peer.meta);
  net::FrameBuffers& frame = peer.conn->NewFrame();
  frame.Reset(wire::MsgType::kParams, id, peer.meta);
  for (const auto& t : *source) frame.AddData(t.data_ptr(), t.nbytes());
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
  double samples = 0, compute = 0, comm = 0;
  for (const auto& s : worker_stats_) {
    samples += s.value("samples", 0.0);
    compute += s.value("compute_seconds", 0.0);
    comm += s.value("communication_seconds", 0.0);
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
          {"communication_seconds", comm / n},
          {"steps", server_->version()},
          {"workers", worker_stats_}};
}

}  // namespace pstrain::ps
