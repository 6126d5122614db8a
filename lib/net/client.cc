#include "net/client.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <thread>

#include <asio/bind_allocator.hpp>
#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>

#include "net/send_gate.h"
#include "util/check.h"
#include "wire/messages.h"

namespace pstrain::net {

using Clock = std::chrono::steady_clock;

namespace {

// A heartbeat (request id 0) says the peer is alive and answers nothing.
bool IsHeartbeat(const wire::FrameHeader& header) {
  return header.type == wire::MsgType::kHeartbeat && header.request_id == 0;
}

}  // namespace

Client::Client(ConnectionOptions options) : options_(options) {}

Client::~Client() {
  WatchGate(nullptr);
  Close();
}

void Client::WatchGate(SendGate* gate) {
  if (gate_ != nullptr)
    gate_->Unwatch(gate_watch_);
  gate_ = gate;
  if (gate_ == nullptr)
    return;
  // Runs on the producer's thread: hand the news to the thread in Call.
  gate_watch_ = gate_->Watch([this] {
    if (wake_pending_.exchange(true))
      return;
    asio::post(
        io_, asio::bind_allocator(HandlerAllocator<int>(&wake_memory_), [this] {
          wake_pending_.store(false);
          if (conn_)
            conn_->ResumeWrite();
        }));
  });
}

// One attempt, given up at `deadline`: a host that went silent (its link
// down) answers no SYN, and the kernel's own retries of one would take
// about two minutes.
void Client::ConnectBy(asio::ip::tcp::socket& socket,
                       const asio::ip::tcp::resolver::results_type& endpoints,
                       Clock::time_point deadline, std::error_code* ec) {
  bool done = false;
  asio::async_connect(socket, endpoints,
                      [&](const std::error_code& e, const auto&) {
                        *ec = e;
                        done = true;
                      });
  io_.restart();
  while (!done && Clock::now() < deadline)
    io_.run_one_for(deadline - Clock::now());
  if (done)
    return;
  std::error_code ignored;
  socket.close(ignored);  // the handler runs, aborted: wait for it
  while (!done)
    io_.run_one();
  *ec = asio::error::timed_out;
}

Status Client::Connect(const std::string& host, int port,
                       std::chrono::milliseconds timeout) {
  asio::ip::tcp::resolver resolver(io_);
  std::error_code ec;
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) {
    return InvalidArgument("cannot resolve " + host + ": " + ec.message());
  }
  const auto deadline = Clock::now() + timeout;
  std::string last_error;
  for (;;) {
    asio::ip::tcp::socket socket(io_);
    // Each attempt has a moment at least, as a blocking one had.
    ConnectBy(socket, endpoints,
              std::max(deadline, Clock::now() + std::chrono::milliseconds(100)),
              &ec);
    if (!ec) {
      conn_ = std::make_shared<Connection>(
          std::move(socket), static_cast<Connection::Handler*>(this), options_);
      closed_ = false;
      close_status_ = Status::Ok();
      conn_->Start();
      return Status::Ok();
    }
    last_error = ec.message();
    if (Clock::now() + std::chrono::milliseconds(100) > deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Timeout("no server at " + host + ":" + std::to_string(port) +
                 " within " + std::to_string(timeout.count() / 1000) + " s (" +
                 last_error + ")");
}

void Client::SetSendWindow(uint64_t bytes) {
  if (conn_)
    conn_->SetSendWindow(bytes);
}

std::shared_ptr<ShmLinkWords> Client::shm_link_words() const {
  if (!conn_ || !conn_->on_shm())
    return nullptr;
  return std::shared_ptr<ShmLinkWords>(conn_, conn_->shm_link_words());
}

void Client::CountPushesInto(std::shared_ptr<ShmLinkWords> words) {
  if (conn_ && !conn_->on_shm())
    conn_->link_turn().CountInto(std::move(words));
}

Status Client::UseShm(std::unique_ptr<ShmStream> stream) {
  if (!connected())
    return Unavailable("not connected to the server");
  return conn_->UseShm(std::move(stream));
}

FrameBuffers& Client::NewRequest() {
  PS_CHECK(conn_ != nullptr) << "NewRequest before Connect";
  return conn_->NewFrame();
}

Status Client::Call(FrameBuffers& request, ReplySink* sink,
                    std::chrono::milliseconds timeout,
                    wire::MsgType* reply_type) {
  PS_RETURN_IF_ERROR(Start(request, sink));
  return Await(timeout, reply_type);
}

Status Client::Start(FrameBuffers& request, ReplySink* sink) {
  if (!connected()) {
    return closed_ && !close_status_.ok()
               ? close_status_
               : Unavailable("not connected to the server");
  }
  // The request id is assigned here so that replies always match a call.
  const uint64_t id = next_request_id_++;
  request.SetRequestId(id);
  awaited_id_ = id;
  sink_ = sink;
  reply_done_ = false;
  error_from_peer_ = false;
  conn_->Send(request);
  // What is ready now, without waiting: the write, as far as the socket
  // takes it (and whatever of a reply is in already). One handler at a
  // time, not poll(): a shared-memory read that looks again from the queue
  // is always ready, and poll() would run it until its spin ran out, long
  // after the request was written and, often, its reply read.
  io_.restart();
  while (!reply_done_ && conn_ && conn_->writing() && io_.poll_one() > 0) {
  }
  return Status::Ok();
}

Status Client::Await(std::chrono::milliseconds timeout,
                     wire::MsgType* reply_type) {
  io_.restart();
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  // --dead_after: the longest the peer may say nothing at all; it looks
  // every tenth of that.
  const auto silence = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.dead_after));
  const bool watched = options_.dead_after > 0;
  uint64_t arrivals = conn_ ? conn_->arrivals() : 0;
  auto heard_at = start;
  while (!reply_done_ && !closed_) {
    const auto now = Clock::now();
    auto left = deadline - now;
    if (left <= Clock::duration::zero())
      break;
    if (watched && now - heard_at > silence) {
      // What came in while this thread did not run is no silence.
      io_.poll();
      if (reply_done_ || closed_)
        break;
    }
    if (watched && conn_->arrivals() != arrivals) {
      arrivals = conn_->arrivals();
      heard_at = now;
    } else if (watched && now - heard_at > silence) {
      sink_ = nullptr;
      return Silent();
    }
    io_.run_one_for(watched ? std::min<Clock::duration>(left, silence / 10)
                            : left);
  }
  sink_ = nullptr;
  if (reply_done_) {
    if (reply_type_ == wire::MsgType::kError) {
      wire::ErrorMsg err;
      Status s = wire::DecodeMeta(reply_meta_, &err);
      if (!s.ok())
        return s.WithContext("error reply");
      error_from_peer_ = true;
      return Status(err.code, err.message);
    }
    *reply_type = reply_type_;
    return Status::Ok();
  }
  if (closed_) {
    return close_status_.ok() ? Unavailable("the server closed the connection")
                              : close_status_;
  }
  return Timeout("no reply within " + std::to_string(timeout.count() / 1000) +
                 " s");
}

Status Client::Silent() {
  std::ostringstream line;
  line << "no word from " << conn_->remote() << " for " << options_.dead_after
       << " s (--dead_after)";
  const Status why = Unavailable(line.str());
  conn_->CloseWith(why);
  io_.restart();
  io_.poll();  // the close's handlers
  closed_ = true;
  close_status_ = why;
  return why;
}

Status Client::OnMeta(Connection& conn, const wire::FrameHeader& header,
                      std::string_view meta, uint64_t data_bytes,
                      std::vector<asio::mutable_buffer>* dst) {
  if (IsHeartbeat(header)) {
    return data_bytes == 0 ? Status::Ok()
                           : Corruption("a heartbeat with data bytes");
  }
  // An error with request id 0 is about the connection, not one request
  // (the server giving up on the job); it answers whatever call is waiting.
  bool connection_error =
      header.type == wire::MsgType::kError && header.request_id == 0;
  if (header.request_id != awaited_id_ && !connection_error) {
    return Corruption("reply for request " + std::to_string(header.request_id) +
                      ", expected " + std::to_string(awaited_id_));
  }
  if (header.type == wire::MsgType::kError || sink_ == nullptr) {
    if (data_bytes != 0) {
      return Corruption("unexpected " + std::to_string(data_bytes) +
                        " data bytes in a " + wire::MsgTypeName(header.type));
    }
    return Status::Ok();
  }
  PS_RETURN_IF_ERROR(sink_->OnMeta(header, meta, data_bytes, dst));
  if (sink_->piecewise())
    conn.ReadPieceByPiece();
  if ((header.flags & wire::kFrameTagged) != 0) {
    // A sink plans one buffer per descriptor, as PsClient does for a reply
    // without rows, the only replies a server tags.
    tag_groups_.resize(dst->size());
    std::iota(tag_groups_.begin(), tag_groups_.end(), size_t{0});
    conn.ReadTagged(tag_groups_);
  }
  return Status::Ok();
}

void Client::OnPiece(Connection&, size_t index) {
  if (sink_ != nullptr)
    sink_->OnPiece(index);
}

void Client::OnFrame(Connection&, const wire::FrameHeader& header,
                     std::string_view meta) {
  if (IsHeartbeat(header))
    return;
  reply_type_ = header.type;
  reply_meta_.assign(meta.data(), meta.size());
  reply_done_ = true;
}

void Client::OnClose(Connection&, const Status& why) {
  closed_ = true;
  close_status_ = why;
}

uint64_t Client::bytes_read() const {
  return conn_ ? conn_->bytes_read() : 0;
}

uint64_t Client::bytes_written() const {
  return conn_ ? conn_->bytes_written() : 0;
}

void Client::Close() {
  if (conn_)
    conn_->Close();
  // Let the closed connection's pending handlers run and release it.
  io_.restart();
  io_.poll();
  conn_.reset();
}

Status Client::Poll() {
  if (conn_) {
    io_.restart();
    io_.poll();
  }
  if (reply_done_ && reply_type_ == wire::MsgType::kError) {
    wire::ErrorMsg err;
    PS_RETURN_IF_ERROR(wire::DecodeMeta(reply_meta_, &err));
    error_from_peer_ = true;
    return Status(err.code, err.message);
  }
  if (!connected()) {
    return closed_ && !close_status_.ok()
               ? close_status_
               : Unavailable("the server closed the connection");
  }
  return Status::Ok();
}

Status Client::WriteNow(std::string_view bytes) {
  if (!connected())
    return Unavailable("not connected to the server");
  return conn_->WriteNow(bytes);
}

}  // namespace pstrain::net
