#include "ps/service/service.h"

#include <asio/post.hpp>

#include "net/transport.h"
#include "ps/engine/batch_runner.h"
#include "ps/engine/master_desk.h"
#include "ps/engine/step_driver.h"
#include "ps/rules/update_rule.h"
#include "ps/service/server_spans.h"
#include "ps/store/parameter_server.h"
#include "report/server_stats.h"
#include "wire/messages.h"

namespace pstrain::ps {

Service::Service(asio::io_context* io, const JobSpec& spec,
                 std::vector<wire::KeySpec> fingerprint,
                 ParameterServer* server, report::EventLog* log,
                 ServiceOptions options)
    : io_(io),
      log_(log),
      options_(std::move(options)),
      listener_(
          io, this,
          net::ConnectionOptions{options_.max_frame_bytes, spec.dead_after},
          [this](std::shared_ptr<net::Connection> conn) {
            const PeerId id = next_id_++;
            ids_[conn.get()] = id;
            conns_[id] = conn;
            engine_.OnAccept(id, conn->remote(), Now());
          }),
      timer_(*io),
      wake_timer_(*io),
      beats_(spec.dead_after),
      engine_(spec, std::move(fingerprint), server, this, options_.engine) {
  if (spec.transport == net::TransportName(net::Transport::kTcp)) {
    shm_refusal_ = "the server's --transport is tcp";
  } else {
    shm_ = std::make_unique<net::ShmAcceptor>(io);
  }
  wire::EncodeMeta(wire::Heartbeat{}, &beat_meta_);
  if (options_.timeline != nullptr) {
    spans_ = std::make_unique<ServerSpans>(
        options_.timeline, &engine_.steps().rule().step_order());
  }
}

void Service::Trace(const TraceMark& mark) {
  if (spans_)
    spans_->Mark(mark);
}

Service::~Service() = default;

Status Service::Listen() {
  PS_RETURN_IF_ERROR(listener_.Listen(options_.host, options_.port));
  if (shm_) {
    Status s = shm_->Listen();
    if (!s.ok()) {
      shm_refusal_ = s.message();
      shm_.reset();
      log_->Info("shared memory cannot be had (" + shm_refusal_ +
                 "): workers stay on TCP");
    }
  }
  engine_.master().set_address(options_.host + ":" + std::to_string(port()));
  return Status::Ok();
}

Status Service::Run() {
  engine_.Start(Now());
  Tick();
  io_->run();
  engine_.steps().UpdateAllKeys();  // what is saved after Run is whole
  return engine_.failure();
}

void Service::PostBatchDone(const BatchResult& result) {
  asio::post(*io_, [this, result] { engine_.OnBatchDone(result, Now()); });
}

void Service::TickNow() {
  // A peer stalled mid-frame is named as such, before the Engine sees a
  // handshake that never ended.
  DropStalledConnections();
  engine_.Tick(Now());
  SendBeats();
}

void Service::SendBeats() {
  if (!beats_.on() || engine_.stopping())
    return;
  std::vector<PeerId> due;
  beats_.Due(Now(), &due);
  for (PeerId id : due) {
    if (net::Connection* conn = Find(id)) {
      net::FrameBuffers& out = conn->NewFrame();
      out.Reset(wire::MsgType::kHeartbeat, 0, beat_meta_);
      conn->Send(out);
    }
  }
}

void Service::Tick() {
  if (engine_.stopping())
    return;
  TickNow();
  if (engine_.stopping())
    return;
  timer_.expires_after(Engine::kTick);
  timer_.async_wait([this](const std::error_code& ec) {
    if (!ec)
      Tick();
  });
}

// Every read and write is asynchronous, so a stalled peer blocks no one; it
// is dropped here so that it holds no connection (and no memory) for ever.
void Service::DropStalledConnections() {
  const Time now = Now();
  std::vector<net::Connection*> stalled;
  for (const auto& [id, conn] : conns_) {
    if (!conn->closed() && conn->StalledFor(now, options_.engine.timeout))
      stalled.push_back(conn.get());
  }
  const auto secs =
      std::chrono::duration_cast<std::chrono::seconds>(options_.engine.timeout)
          .count();
  for (auto* conn : stalled) {
    conn->CloseWith(Timeout("a frame stalled mid-way for more than " +
                            std::to_string(secs) + " s"));
  }
}

net::Connection* Service::Find(PeerId id) const {
  auto it = conns_.find(id);
  return it == conns_.end() || it->second->closed() ? nullptr
                                                    : it->second.get();
}

Status Service::OnHeader(net::Connection& conn,
                         const wire::FrameHeader& header) {
  return engine_.OnHeader(ids_.at(&conn), header);
}

Status Service::OnMeta(net::Connection& conn, const wire::FrameHeader& header,
                       std::string_view meta, uint64_t data_bytes,
                       std::vector<asio::mutable_buffer>* dst) {
  if (header.type == wire::MsgType::kShmOffer)
    return Status::Ok();  // the net's, not the Engine's: OnFrame answers
  plan_.buffers.clear();
  plan_.groups.clear();
  plan_.piece_by_piece = false;
  plan_.in_place = false;
  PS_RETURN_IF_ERROR(
      engine_.OnMeta(ids_.at(&conn), header, meta, data_bytes, &plan_));
  for (const MutableSpan& b : plan_.buffers)
    dst->emplace_back(b.data, b.bytes);
  if (plan_.piece_by_piece)
    conn.ReadPieceByPiece();
  if (plan_.in_place)
    conn.ReadInPlace();
  if (!plan_.groups.empty())
    conn.ReadTagged(plan_.groups);
  return Status::Ok();
}

void Service::OnPiece(net::Connection& conn, size_t index) {
  engine_.OnPiece(ids_.at(&conn), index, Now());
}

bool Service::OnPieceAt(net::Connection& conn, size_t index,
                        const uint8_t* data) {
  return engine_.OnPieceAt(ids_.at(&conn), index, data, Now());
}

void Service::OnFrame(net::Connection& conn, const wire::FrameHeader& header,
                      std::string_view meta) {
  if (header.type == wire::MsgType::kShmOffer)
    return AnswerShmOffer(conn, header.request_id, meta);
  const PeerId id = ids_.at(&conn);
  beats_.In(id, header.type, Now());
  engine_.OnFrame(id, header, meta, Now());
}

// The Engine has let the frame through its gates (a token proven, a hello
// said: Engine::OnHeader), so the peer may have a ticket if it shares our
// host.
void Service::AnswerShmOffer(net::Connection& conn, uint64_t request_id,
                             std::string_view meta) {
  wire::ShmOffer offer;
  Status s = wire::DecodeMeta(meta, &offer);
  if (!s.ok())
    return conn.SendErrorAndClose(request_id, s);
  wire::ShmTicket ticket;
  if (!shm_) {
    ticket.refusal = shm_refusal_;
  } else if (offer.host.empty() || offer.host != net::HostIdentity()) {
    ticket.refusal = "the worker is on another host";
  } else {
    ticket.socket_name = shm_->socket_name();
    ticket.cookie = shm_->IssueTicket(conns_.at(ids_.at(&conn)));
    if (ticket.cookie.empty())
      ticket.refusal = "no random bytes for a cookie";
  }
  std::string reply;
  wire::EncodeMeta(ticket, &reply);
  net::FrameBuffers& out = conn.NewFrame();
  out.Reset(wire::MsgType::kShmTicket, request_id, reply);
  conn.Send(out);
}

void Service::OnWritten(net::Connection& conn, wire::MsgType type) {
  auto it = ids_.find(&conn);
  if (it != ids_.end())
    engine_.OnWritten(it->second, type, Now());
}

void Service::OnClose(net::Connection& conn, const Status& why) {
  auto it = ids_.find(&conn);
  if (it == ids_.end())
    return;
  const PeerId id = it->second;
  closed_bytes_read_ += conn.bytes_read();
  closed_bytes_written_ += conn.bytes_written();
  beats_.Forget(id);
  engine_.OnClose(id, why, Now());
  // The connection may still be inside its own callback; free it later.
  asio::post(*io_, [this, id, c = &conn] {
    ids_.erase(c);
    conns_.erase(id);
    if (shut_down_ && conns_.empty())
      timer_.cancel();  // nothing left to wait for
  });
}

void Service::Send(PeerId peer, const OutFrame& frame) {
  net::Connection* conn = Find(peer);
  if (!conn)
    return;
  beats_.Out(peer, Now());
  net::FrameBuffers& out = conn->NewFrame();
  out.Reset(frame.type, frame.request_id, frame.meta);
  out.SetGate(frame.gate);
  if (!conn->on_shm())
    PaceOverTcp(*conn, frame);
  if (spans_ && frame.type == wire::MsgType::kParams)
    out.SetWriteObserver(spans_->Replies(peer));
  for (size_t i = 0; i < frame.data.size(); ++i) {
    if (frame.tagged)
      out.AddTag(static_cast<uint32_t>(i));
    out.AddData(frame.data[i].data, frame.data[i].bytes, frame.data[i].mark);
  }
  conn->Send(out);
}

// Where workers of this host push to other hosts, a reply to another host
// takes its turn on the link after their pushes (net/link_turn.h): it waits
// while one is underway, and keeps at most the send window unsent in the
// kernel, so that a push that starts later does not queue behind it.
// Elsewhere the kernel takes the reply whole, which measured faster.
void Service::PaceOverTcp(net::Connection& conn, const OutFrame& frame) {
  if (frame.after_pushes_below == 0 || !LocalWorkers())
    return;
  conn.SetSendWindow(frame.send_window);
  conn.link_turn().set_round(frame.after_pushes_below);
  if (!conn.link_turn().holds()) {
    conn.link_turn().HoldWhile(
        [this](net::LinkTurn::Clock::time_point now, uint64_t round) {
          return LocalPush(now, round);
        });
  }
}

bool Service::LocalWorkers() const {
  for (const auto& [id, conn] : conns_) {
    if (conn->shm_link_words() != nullptr)
      return true;
  }
  return false;
}

// Whether a worker of this host, one on shared memory, has a push to
// another host underway, of a round before `round`.
bool Service::LocalPush(net::LinkTurn::Clock::time_point now,
                        uint64_t round) const {
  for (const auto& [id, conn] : conns_) {
    const net::ShmLinkWords* words = conn->shm_link_words();
    if (words != nullptr && net::PushUnderway(*words, now, round))
      return true;
  }
  return false;
}

void Service::ResumeWrite(PeerId peer) {
  if (net::Connection* conn = Find(peer))
    conn->ResumeWrite();
}

void Service::SendErrorAndClose(PeerId peer, uint64_t request_id,
                                const Status& status) {
  if (net::Connection* conn = Find(peer))
    conn->SendErrorAndClose(request_id, status);
}

void Service::Close(PeerId peer, const Status& why) {
  net::Connection* conn = Find(peer);
  if (!conn)
    return;
  if (why.ok()) {
    conn->Close();
  } else {
    conn->CloseWith(why);
  }
}

void Service::Post() {
  asio::post(*io_, [this] { engine_.Continue(Now()); });
}

void Service::WakeAt(Time when) {
  wake_timer_.expires_at(when);
  wake_timer_.async_wait([this](const std::error_code& ec) {
    if (!ec)
      engine_.OnTimer(Now());
  });
}

void Service::Shutdown() {
  shut_down_ = true;
  listener_.Close();
  if (shm_)
    shm_->Close();
  timer_.cancel();
  wake_timer_.cancel();
  // Give peers a moment to read their last reply, then close what is left.
  timer_.expires_after(std::chrono::seconds(5));
  timer_.async_wait([this](const std::error_code& ec) {
    if (ec)
      return;
    std::vector<std::shared_ptr<net::Connection>> open;
    for (auto& [id, conn] : conns_)
      open.push_back(conn);
    for (auto& conn : open)
      conn->Close();
  });
}

report::ServerStats Service::Stats() const {
  uint64_t read = closed_bytes_read_, written = closed_bytes_written_;
  for (const auto& [id, conn] : conns_) {
    if (conn->closed())
      continue;  // counted at its close
    read += conn->bytes_read();
    written += conn->bytes_written();
  }
  return engine_.Stats(read, written);
}

}  // namespace pstrain::ps
