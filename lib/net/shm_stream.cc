#include "net/shm_stream.h"

#include <unistd.h>

namespace pstrain::net {

ShmStream::ShmStream(asio::io_context& io, ShmSegment segment, bool server_end,
                     ShmBells own, ShmBells peer, ShmStreamOptions options)
    : io_(&io),
      segment_(std::move(segment)),
      rx_(segment_.Ring(server_end ? ShmDirection::kToServer
                                   : ShmDirection::kToClient)),
      tx_(segment_.Ring(server_end ? ShmDirection::kToClient
                                   : ShmDirection::kToServer)),
      data_bell_(io, own.data),
      room_bell_(io, own.room),
      peer_(peer),
      options_(options),
      read_policy_(options.busy, options.spin),
      write_policy_(options.busy, options.spin),
      server_end_(server_end) {}

ShmStream::~ShmStream() {
  std::error_code ignored;
  data_bell_.close(ignored);
  room_bell_.close(ignored);
  for (int fd : {peer_.data, peer_.room}) {
    if (fd >= 0)
      ::close(fd);
  }
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
  // A write that the sleeping peer's read waits for rings its data bell;
  // a read that frees room for its sleeping write rings its room bell.
  if (wake)
    Ring(dst != nullptr ? peer_.room : peer_.data);
  return *n;
}

ShmStream::Attempt ShmStream::TryWant(const ShmWant& want, bool at_end) {
  Attempt a;
  Result<uint64_t> n = rx_.Readable();
  if (!n.ok()) {
    failure_ = n.status();
    a.ec = asio::error::invalid_argument;
    return a;
  }
  if (*n >= want.bytes)
    return a;
  End(/*read=*/true, &a);
  // As Try: the last bytes may have come between the two looks.
  if (a.ec == asio::error::eof && !at_end)
    return TryWant(want, /*at_end=*/true);
  return a;
}

const uint8_t* ShmStream::PeekRead(size_t bytes) {
  Result<const uint8_t*> at = rx_.Peek(bytes);
  return at.ok() ? *at : nullptr;
}

void ShmStream::SkipRead(size_t bytes) {
  bool wake = false;
  rx_.Skip(bytes, &wake);
  if (wake)
    Ring(peer_.room);
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

void ShmStream::Ring(int bell) {
  const uint64_t one = 1;
  // EAGAIN (the counter is full) still leaves the peer woken.
  (void)!::write(bell, &one, sizeof(one));
}

void ShmStream::DrainBell(bool read) {
  uint64_t count;
  (void)!::read(Bell(read).native_handle(), &count, sizeof(count));
}

void ShmStream::CancelWaits() {
  std::error_code ignored;
  data_bell_.cancel(ignored);
  room_bell_.cancel(ignored);
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
  CancelWaits();  // sleepers look again, and find the end
}

void ShmStream::Close() {
  if (closed_)
    return;
  closed_ = true;
  tx_.Close();
  // The peer's read may sleep for data that will not come, its write for
  // room that our reads will no longer make.
  Ring(peer_.data);
  Ring(peer_.room);
  CancelWaits();
}

}  // namespace pstrain::net
