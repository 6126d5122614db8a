#include "net/shm_stream.h"

#include <unistd.h>

namespace pstrain::net {

ShmStream::ShmStream(asio::io_context& io, ShmSegment segment, bool server_end,
                     int bell, int peer_bell, ShmStreamOptions options)
    : io_(&io),
      segment_(std::move(segment)),
      rx_(segment_.Ring(server_end ? ShmDirection::kToServer
                                   : ShmDirection::kToClient)),
      tx_(segment_.Ring(server_end ? ShmDirection::kToClient
                                   : ShmDirection::kToServer)),
      bell_(io, bell),
      peer_bell_(peer_bell),
      options_(options) {}

ShmStream::~ShmStream() {
  std::error_code ignored;
  bell_.close(ignored);
  if (peer_bell_ >= 0)
    ::close(peer_bell_);
}

size_t ShmStream::Move(ShmRing* ring, void* dst, const void* src, size_t size,
                       Attempt* a) {
  bool wake = false;
  Result<size_t> n = dst != nullptr ? ring->Read(dst, size, &wake)
                                    : ring->Write(src, size, &wake);
  if (!n.ok()) {
    failure_ = n.status();
    a->ec = asio::error::invalid_argument;
    return 0;
  }
  if (wake)
    RingPeer();
  return *n;
}

void ShmStream::End(bool read, Attempt* a) {
  if (read) {
    // The peer's last bytes are read before its end is.
    if (rx_.closed() || peer_gone_)
      a->ec = asio::error::eof;
    else
      a->would_block = true;
    return;
  }
  if (peer_gone_ || rx_.closed())
    a->ec = asio::error::broken_pipe;
  else
    a->would_block = true;
}

void ShmStream::RingPeer() {
  const uint64_t one = 1;
  // EAGAIN (the counter is full) still leaves the peer woken.
  (void)!::write(peer_bell_, &one, sizeof(one));
}

void ShmStream::DrainBell() {
  uint64_t count;
  (void)!::read(bell_.native_handle(), &count, sizeof(count));
}

Status ShmStream::WriteNow(std::string_view bytes) {
  if (peer_gone_ || closed_)
    return Unavailable("write to shared memory: the peer is gone");
  Result<uint64_t> room = tx_.Writable();
  if (!room.ok())
    return room.status();
  if (*room < bytes.size())
    return Unavailable("write to shared memory: the ring is full");
  Attempt a;
  Move(&tx_, nullptr, bytes.data(), bytes.size(), &a);
  return a.ec ? failure_ : Status::Ok();
}

void ShmStream::PeerGone() {
  peer_gone_ = true;
  std::error_code ignored;
  bell_.cancel(ignored);  // sleepers look again, and find the end
}

void ShmStream::Close() {
  if (closed_)
    return;
  closed_ = true;
  tx_.Close();
  RingPeer();
  std::error_code ignored;
  bell_.cancel(ignored);
}

}  // namespace pstrain::net
