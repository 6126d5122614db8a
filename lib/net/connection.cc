#include "net/connection.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <asio/error.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "net/address.h"
#include "net/lifeline.h"
#include "net/peer_host_watch.h"
#include "net/send_gate.h"
#include "wire/messages.h"

namespace pstrain::net {

// Reads as asio::transfer_all does, and counts each piece that came in
// (Traffic::Arrived), so that a peer sending one large frame is heard.
template <typename Buffers, typename Fn>
void Connection::ReadAll(const Buffers& buffers, Fn fn) {
  auto heard = [this](const std::error_code& ec, size_t n) -> size_t {
    if (n > 0)
      traffic_.Arrived();
    return ec ? 0 : asio::detail::default_max_transfer_size;
  };
  shm_ ? asio::async_read(*shm_, buffers, heard, OnRead(std::move(fn)))
       : asio::async_read(socket_, buffers, heard, OnRead(std::move(fn)));
}

template <typename Buffers, typename Fn>
void Connection::WriteAll(const Buffers& buffers, Fn fn) {
  shm_ ? asio::async_write(*shm_, buffers, OnWrite(std::move(fn)))
       : asio::async_write(socket_, buffers, OnWrite(std::move(fn)));
}

Status Connection::WriteNow(std::string_view bytes) {
  if (shm_)
    PS_RETURN_IF_ERROR(shm_->WriteNow(bytes));
  const ssize_t n = shm_ ? static_cast<ssize_t>(bytes.size())
                         : ::send(socket_.native_handle(), bytes.data(),
                                  bytes.size(), MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(bytes.size())) {
    return Unavailable(
        "write to " + remote_ + ": " +
        (n < 0 ? std::string(std::strerror(errno)) : "short write"));
  }
  traffic_.Wrote(bytes.size());
  return Status::Ok();
}

std::string Connection::local_address() const {
  std::error_code ec;
  auto ep = socket_.local_endpoint(ec);
  return ec ? "" : ep.address().to_string();
}

Connection::Connection(asio::ip::tcp::socket socket, Handler* handler,
                       ConnectionOptions options)
    : socket_(std::move(socket)),
      handler_(handler),
      options_(options),
      remote_(RemoteAddressOf(socket_)),
      parser_(options.max_frame_bytes),
      pace_(socket_) {}

void Connection::Start() {
  std::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  if (options_.dead_after > 0)
    WatchPeerHost(socket_.native_handle(), options_.dead_after);
  ReadHead();
}

// read_some first: a frame's clock starts with its first byte, so a peer
// that sends half a header and stops is as stalled as one that stops later.
void Connection::ReadHead() {
  if (closed_)
    return;
  traffic_.ReadEnded();
  auto on_head = [self = shared_from_this(), tcp = shm_ == nullptr](
                     const std::error_code& ec, size_t n) {
    if (tcp && self->shm_)
      return self->OnLifeline(ec, n);
    self->OnHeadBytes(ec, n);
  };
  const auto head = asio::buffer(head_, sizeof(head_));
  shm_ ? shm_->async_read_some(head, OnRead(on_head))
       : socket_.async_read_some(head, OnRead(on_head));
}

Status Connection::UseShm(std::unique_ptr<ShmStream> stream) {
  if (closed_ || shm_ || traffic_.reading())
    return Unavailable("the connection is not between two frames");
  shm_ = std::move(stream);
  // The TCP read waiting for the next head ends (operation_aborted) and
  // becomes the lifeline; the next head comes through the rings.
  std::error_code ignored;
  socket_.cancel(ignored);
  ReadHead();
  return Status::Ok();
}

void Connection::OnLifeline(const std::error_code& ec, size_t n) {
  if (closed_)
    return;
  if (n == 0 && ec == asio::error::operation_aborted) {
    return WatchLifeline(&socket_, [self = shared_from_this()](LifelineEnd e) {
      self->OnLifeline(asio::error::eof, e == LifelineEnd::kBytes ? 1 : 0);
    });
  }
  if (n > 0) {
    return Fail(Corruption("bytes on the TCP socket of a connection moved to "
                           "shared memory"),
                0, false);
  }
  shm_->PeerGone();
}

bool Connection::ReadEnded(const std::error_code& ec) {
  if (!closed_ && ec)
    Fail(ReadError(ec), 0, false);
  return closed_ || ec;
}

Status Connection::ReadError(const std::error_code& ec) const {
  if (shm_ && ec == asio::error::invalid_argument && !shm_->failure().ok())
    return shm_->failure();
  return FromAsioError(ec, "read from " + remote_);
}

void Connection::OnHeadBytes(const std::error_code& ec, size_t n) {
  if (closed_)
    return;
  if (ec)
    return OnHead(ec);
  traffic_.ReadStarted(std::chrono::steady_clock::now());
  traffic_.Arrived();
  if (n == sizeof(head_))
    return OnHead(ec);
  ReadAll(asio::buffer(head_ + n, sizeof(head_) - n),
          [self = shared_from_this()](const std::error_code& ec, size_t) {
            self->OnHead(ec);
          });
}

// The parser (wire::FrameParser, which the fuzzer runs too) checks every
// byte the peer sent; the handler is asked between its stages.
void Connection::OnHead(const std::error_code& ec) {
  // A peer closing between frames is an orderly end, not a failure.
  if (!closed_ && ec == asio::error::eof)
    return Finish(Status::Ok());
  if (ReadEnded(ec))
    return;
  traffic_.Read(sizeof(head_));
  Status s = parser_.Header(head_);
  if (!s.ok())
    return Fail(s, 0, true);
  const wire::FrameHeader& header = parser_.header();
  s = handler_->OnHeader(*this, header);
  if (s.ok())
    s = parser_.MetaLen(head_ + wire::kFrameHeaderBytes);
  if (!s.ok())
    return Fail(s, header.request_id, true);
  meta_.resize(parser_.meta_len());
  ReadAll(asio::buffer(meta_),
          [self = shared_from_this()](const std::error_code& ec, size_t) {
            self->OnMetaRead(ec);
          });
}

void Connection::OnMetaRead(const std::error_code& ec) {
  if (ReadEnded(ec))
    return;
  traffic_.Read(meta_.size());
  const wire::FrameHeader& header = parser_.header();
  const uint64_t data_bytes = parser_.data_bytes();
  data_dst_.clear();
  reads_.Reset();
  Status s = parser_.Meta(meta_);
  if (s.ok())
    s = handler_->OnMeta(*this, header, meta_, data_bytes, &data_dst_);
  if (s.ok())
    s = reads_.Start(header, data_bytes, data_dst_);
  if (!s.ok())
    return Fail(s, header.request_id, true);
  ReadData();
}

void Connection::ReadData() {
  // The handler may have closed it: no read may wait on a closed stream.
  if (closed_)
    return;
  const DataReads::Step step = reads_.Next();
  if (step.kind == DataReads::Step::kDone)
    return OnDataRead({});
  if (step.kind == DataReads::Step::kTag) {
    return ReadAll(
        asio::buffer(reads_.tag(), wire::kTagBytes),
        [self = shared_from_this()](const std::error_code& ec, size_t) {
          if (self->ReadEnded(ec))
            return;
          const wire::FrameHeader& header = self->parser_.header();
          Status s = self->reads_.Take(wire::MsgTypeName(header.type));
          if (!s.ok())
            return self->Fail(s, header.request_id, true);
          self->ReadData();
        });
  }
  if (step.kind == DataReads::Step::kInPlace)
    return ReadPieceAt(step);
  ReadBuffers(step);
}

void Connection::ReadBuffers(const DataReads::Step& step) {
  ReadAll(BufferView<asio::mutable_buffer>(data_dst_.data() + step.begin,
                                           data_dst_.data() + step.end),
          [self = shared_from_this(), step](const std::error_code& ec, size_t) {
            if (self->ReadEnded(ec))
              return;
            if (self->reads_.piecewise())
              self->handler_->OnPiece(*self, step.begin);
            self->reads_.Done(step);
            self->ReadData();
          });
}

// Waits until the whole buffer is in the ring, then offers it where it lies,
// dropped once the handler is done; one that wraps round is read by copy.
void Connection::ReadPieceAt(const DataReads::Step& step) {
  const size_t n = data_dst_[step.begin].size();
  shm_->async_wait_readable(
      n, OnRead([self = shared_from_this(), step, n](const std::error_code& ec,
                                                     size_t) {
        if (self->ReadEnded(ec))
          return;
        const uint8_t* at = self->shm_->PeekRead(n);
        if (at == nullptr)
          return self->ReadBuffers(step);
        if (!self->handler_->OnPieceAt(*self, step.begin, at)) {
          std::memcpy(self->data_dst_[step.begin].data(), at, n);
          self->handler_->OnPiece(*self, step.begin);
        }
        self->shm_->SkipRead(n);
        self->reads_.Done(step);
        self->ReadData();
      }));
}

void Connection::OnDataRead(const std::error_code& ec) {
  if (ReadEnded(ec))
    return;
  traffic_.Read(parser_.data_bytes());
  traffic_.ReadEnded();
  handler_->OnFrame(*this, parser_.header(), meta_);
  ReadHead();
}

void Connection::Send(FrameBuffers& frame) {
  if (closed_) {
    frames_.Give(&frame);
    return;
  }
  write_queue_.push_back(&frame);
  if (!writing_)
    WriteNext();
}

void Connection::WriteNext() {
  if (write_queue_.empty()) {
    writing_ = false;
    traffic_.WriteEnded();
    if (close_after_write_)
      Finish(Status::Ok());
    return;
  }
  writing_ = true;
  traffic_.WriteStarted(std::chrono::steady_clock::now());
  FrameBuffers* frame = write_queue_.front();
  frame->Finish();
  gated_.Start(*frame);
  pace_.turn().Started(frame->frame_bytes(), traffic_.writing_since());
  WriteGated();
}

void Connection::WriteGated() {
  FrameBuffers* frame = write_queue_.front();
  if (frame->gate() != nullptr && frame->gate()->aborted()) {
    writing_ = false;  // nothing in flight: Finish releases the frame
    return Fail(IOError("the data of a " +
                        std::string(wire::MsgTypeName(frame->type())) + " to " +
                        remote_ + " was never produced"),
                0, false);
  }
  if (!gated_.at_group() || shm_ ||
      !pace_.Wait(OnWrite(
          [self = shared_from_this(), frame](const std::error_code& ec) {
            frame->Window(false);
            if (ec || self->closed_)
              return self->FrameWritten(frame, ec);  // closed: released
            self->WriteOpen(frame);
          })))
    return WriteOpen(frame);
  frame->Window(true);
}

void Connection::WriteOpen(FrameBuffers* frame) {
  const GatedWrites::Range r = gated_.Next(*frame);
  if (r.empty()) {
    waiting_for_gate_ = true;
    traffic_.WriteEnded();
    return;
  }
  const auto& buffers = frame->buffers();
  WriteAll(BufferView<asio::const_buffer>(buffers.data() + r.begin,
                                          buffers.data() + r.end),
           [self = shared_from_this(), frame, r](const std::error_code& ec,
                                                 size_t n) {
             self->traffic_.Wrote(n);
             self->pace_.turn().Wrote(n, std::chrono::steady_clock::now());
             frame->Wrote(r.begin, ec ? r.begin : r.end);
             self->gated_.Wrote(r);
             if (!ec && !self->closed_ && !self->gated_.done())
               return self->WriteGated();
             self->FrameWritten(frame, ec);
           });
}

void Connection::ResumeWrite() {
  if (!waiting_for_gate_ || closed_)
    return;
  waiting_for_gate_ = false;
  traffic_.WriteStarted(std::chrono::steady_clock::now());
  WriteGated();
}

void Connection::FrameWritten(FrameBuffers* frame, const std::error_code& ec) {
  pace_.turn().Ended();
  write_queue_.pop_front();
  frames_.Give(frame);
  handler_->OnWritten(*this, frame->type());
  if (closed_)
    return;
  if (ec)
    return Fail(FromAsioError(ec, "write to " + remote_), 0, false);
  WriteNext();
}

void Connection::SendErrorAndClose(uint64_t request_id, const Status& status) {
  if (closed_)
    return;
  wire::ErrorMsg msg{status.code(), status.message()};
  std::string meta;
  wire::EncodeMeta(msg, &meta);
  FrameBuffers& frame = NewFrame();
  frame.Reset(wire::MsgType::kError, request_id, meta);
  close_after_write_ = true;
  Send(frame);
}

void Connection::Fail(const Status& status, uint64_t request_id,
                      bool tell_peer) {
  if (tell_peer && !close_after_write_) {
    // Tell the peer why before closing; the handler learns once we are done.
    pending_failure_ = status;
    SendErrorAndClose(request_id, status);
    return;
  }
  Finish(status);
}

void Connection::Close() {
  Finish(Status::Ok());
}

void Connection::Finish(const Status& why) {
  if (closed_)
    return;
  closed_ = true;
  if (shm_)
    shm_->Close();
  std::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  // Frames never started will not be written; the one in flight (none for
  // a frame waiting for its gate) reports from its own completion handler.
  if (waiting_for_gate_)
    writing_ = waiting_for_gate_ = false;
  while (write_queue_.size() > (writing_ ? 1u : 0u)) {
    FrameBuffers* frame = write_queue_.back();
    write_queue_.pop_back();
    frames_.Give(frame);
    handler_->OnWritten(*this, frame->type());
  }
  handler_->OnClose(*this, why.ok() ? pending_failure_ : why);
}

}  // namespace pstrain::net
