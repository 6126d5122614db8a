// libFuzzer entry point for the shared-memory frame reader: a real
// net::ShmSegment and the server's net::ShmStream, read as net::Connection
// reads (wire::FrameParser stage by stage), while the input plays a hostile
// worker that owns the other end of the ring and may scribble over the
// words both ends share. run.sh builds it with the wire fuzzer's flags and
// runs it over the same corpus.
//
// The input: byte 0 picks the mode. Below 0x80 the peer is honest: the rest
// is the byte stream, written in pieces of byte0 % 17 bytes (0: as much as
// fits), and everything the reader takes must be exactly that stream.
// From 0x80 the rest is a script of records, each an op byte (kind = op & 3,
// arg = op >> 2) and its operands:
//   kind 0: arg + 1 stream bytes follow;   kind 1: (arg + 1) * 64 of them;
//   kind 2: set the shared word arg % 5 (head, tail, consumer_waiting,
//           producer_waiting, closed) to the next 8 bytes (little-endian),
//           added to its current value when (arg / 5) is odd;
//   kind 3: arg % 4: ring the reader's doorbell unasked; stop (or resume)
//           ringing it when the ring asks to; close the ring and go on
//           writing; raise the producer's waiting flag.
// Once the input is used up the peer closes the ring and rings the bell,
// as an orderly worker would, so every read ends: with EOF, a parser error
// or the ring's kCorruption. Single-threaded and never blocking: the
// io_context is only polled, between the peer's steps.

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <asio/read.hpp>

#include "fuzz/wire_fuzz_input.h"
#include "net/shm_ring.h"
#include "net/shm_segment.h"
#include "net/shm_stream.h"
#include "util/status.h"
#include "wire/frame_parser.h"

namespace pstrain::fuzz {
namespace {

using net::ShmDirection;
using net::ShmRing;
using net::ShmRingControl;
using net::ShmSegment;
using net::ShmStream;

// The smallest ring, so that short inputs wrap it and fill it.
constexpr uint64_t kRingBytes = ShmRing::kMinBytes;
// Where the segment keeps the worker-to-server ring (net/shm_segment.cc):
// the peer maps the descriptor itself, as a real worker's process does.
// CheckLayout makes sure these still hold.
constexpr uint64_t kHeaderBytes = 4096;
constexpr uint64_t kControlAt = 64;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "shm_fuzzer: %s\n", what);
  std::abort();
}

// The worker's end: its own mapping of the segment, an honest ShmRing over
// it, and the shared words within reach for scribbling.
class Peer {
 public:
  explicit Peer(const ShmSegment& segment) {
    void* base = ::mmap(nullptr, segment.size(), PROT_READ | PROT_WRITE,
                        MAP_SHARED, segment.fd(), 0);
    if (base == MAP_FAILED)
      Fail("mmap of the segment");
    base_ = static_cast<uint8_t*>(base);
    size_ = segment.size();
    control_ = reinterpret_cast<ShmRingControl*>(base_ + kControlAt);
  }
  ~Peer() { ::munmap(base_, size_); }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  ShmRing Ring() const {
    return ShmRing(control_, base_ + kHeaderBytes, kRingBytes);
  }
  ShmRingControl* control() const { return control_; }

 private:
  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  ShmRingControl* control_ = nullptr;
};

// The peer's copy of the layout must be the segment's, or every scribble
// lands beside the words it means: a write through the segment's own ring
// must show in our head word and data.
void CheckLayout() {
  Result<ShmSegment> segment = ShmSegment::Create(kRingBytes);
  if (!segment.ok())
    Fail(segment.status().ToString().c_str());
  Peer peer(*segment);
  ShmRing ring = segment->Ring(ShmDirection::kToServer);
  bool wake = false;
  const char bytes[3] = {'a', 'b', 'c'};
  Result<size_t> n = ring.Write(bytes, sizeof(bytes), &wake);
  char seen[3] = {};
  bool ignored = false;
  ShmRing mine = peer.Ring();
  if (!n.ok() || *n != sizeof(bytes) || peer.control()->head.load() != 3 ||
      !mine.Readable().ok() || *mine.Readable() != 3 ||
      !mine.Read(seen, sizeof(seen), &ignored).ok() ||
      std::memcmp(seen, bytes, sizeof(bytes)) != 0)
    Fail("the segment's layout is not the one this fuzzer assumes");
}

// The server's reading side, stage by stage as net::Connection reads.
class Reader {
 public:
  explicit Reader(ShmStream* stream)
      : stream_(stream), parser_(kFuzzMaxFrameBytes) {}

  void Start() { ReadPrefix(); }
  bool done() const { return done_; }
  const std::error_code& error() const { return error_; }
  bool parser_refused() const { return parser_refused_; }
  // Every byte the stream handed over, in order.
  const std::string& seen() const { return seen_; }

 private:
  void ReadPrefix() {
    asio::async_read(
        *stream_, asio::buffer(prefix_),
        [this](const std::error_code& ec, size_t n) {
          Took(prefix_, n);
          if (ec)
            return End(ec);
          if (!parser_.Header(prefix_).ok() ||
              !parser_.MetaLen(prefix_ + wire::kFrameHeaderBytes).ok())
            return Refused();
          meta_.resize(parser_.meta_len());
          ReadMeta();
        });
  }

  void ReadMeta() {
    asio::async_read(*stream_, asio::buffer(meta_),
                     [this](const std::error_code& ec, size_t n) {
                       Took(meta_.data(), n);
                       if (ec)
                         return End(ec);
                       if (!parser_.Meta(meta_).ok())
                         return Refused();
                       // The header bounded it by the frame limit.
                       data_.resize(parser_.data_bytes());
                       ReadData();
                     });
  }

  void ReadData() {
    asio::async_read(*stream_, asio::buffer(data_),
                     [this](const std::error_code& ec, size_t n) {
                       Took(data_.data(), n);
                       if (ec)
                         return End(ec);
                       ReadPrefix();
                     });
  }

  void Took(const char* bytes, size_t n) { seen_.append(bytes, n); }

  void End(const std::error_code& ec) {
    // invalid_argument is the stream's word for a corrupt ring, and then
    // it must say why (Connection reports failure()).
    if (ec == asio::error::invalid_argument && stream_->failure().ok())
      Fail("invalid_argument from the stream with no failure()");
    if (ec != asio::error::invalid_argument && !stream_->failure().ok())
      Fail("the stream has a failure() but did not report it");
    if (ec != asio::error::eof && ec != asio::error::invalid_argument)
      Fail(("unexpected read error: " + ec.message()).c_str());
    error_ = ec;
    done_ = true;
  }

  void Refused() {
    parser_refused_ = true;
    done_ = true;
  }

  ShmStream* stream_;
  wire::FrameParser parser_;
  char prefix_[wire::FrameParser::kPrefixBytes];
  std::string meta_;
  std::string data_;
  std::string seen_;
  std::error_code error_;
  bool parser_refused_ = false;
  bool done_ = false;
};

// The script in the input, one peer step at a time.
class Script {
 public:
  Script(const uint8_t* data, size_t size)
      : in_(reinterpret_cast<const char*>(data) + 1, size - 1),
        hostile_(data[0] >= 0x80),
        piece_(data[0] % 17) {}

  bool hostile() const { return hostile_; }
  // The honest stream, for checking what the reader saw.
  std::string_view stream() const { return in_; }

  // The next step: stream bytes to write (set in *bytes), or an action on
  // the shared words done here; false once the input is used up.
  bool Next(Peer* peer, ShmRing* ring, int bell, std::string_view* bytes) {
    *bytes = {};
    if (at_ == in_.size())
      return false;
    if (!hostile_) {
      const size_t n = piece_ == 0 ? in_.size() - at_ : piece_;
      *bytes = Take(n);
      return true;
    }
    const uint8_t op = static_cast<uint8_t>(in_[at_++]);
    const unsigned arg = op >> 2;
    switch (op & 3) {
      case 0:
        *bytes = Take(arg + 1);
        break;
      case 1:
        *bytes = Take((arg + 1) * 64);
        break;
      case 2:
        Scribble(peer->control(), arg % 5, (arg / 5) % 2 == 1);
        break;
      default:
        switch (arg % 4) {
          case 0:
            RingBell(bell);
            break;
          case 1:
            rude_ = !rude_;
            break;
          case 2:
            ring->Close();
            break;
          default:
            ring->ProducerWaits();
            break;
        }
    }
    return true;
  }

  // Whether the peer ignores the ring's requests to wake the reader.
  bool rude() const { return rude_; }

  static void RingBell(int bell) {
    const uint64_t one = 1;
    (void)!::write(bell, &one, sizeof(one));
  }

 private:
  std::string_view Take(size_t n) {
    n = std::min(n, in_.size() - at_);
    std::string_view out = in_.substr(at_, n);
    at_ += n;
    return out;
  }

  void Scribble(ShmRingControl* c, unsigned word, bool relative) {
    uint8_t le[8] = {};
    const std::string_view v = Take(sizeof(le));
    std::memcpy(le, v.data(), v.size());
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i)
      value = value << 8 | le[i];
    switch (word) {
      case 0:
        c->head.store(value + (relative ? c->head.load() : 0));
        break;
      case 1:
        c->tail.store(value + (relative ? c->tail.load() : 0));
        break;
      case 2:
        Set32(&c->consumer_waiting, value, relative);
        break;
      case 3:
        Set32(&c->producer_waiting, value, relative);
        break;
      default:
        Set32(&c->closed, value, relative);
        break;
    }
  }

  static void Set32(std::atomic<uint32_t>* w, uint64_t value, bool relative) {
    w->store(static_cast<uint32_t>(value) + (relative ? w->load() : 0));
  }

  std::string_view in_;
  size_t at_ = 0;
  bool hostile_;
  size_t piece_;
  bool rude_ = false;
};

int EventFd() {
  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0)
    Fail("eventfd");
  return fd;
}

void Run(const uint8_t* data, size_t size) {
  Result<ShmSegment> segment = ShmSegment::Create(kRingBytes);
  if (!segment.ok())
    Fail(segment.status().ToString().c_str());
  Peer peer(*segment);
  segment->CloseFd();
  ShmRing ring = peer.Ring();
  Script script(data, size);

  asio::io_context io;
  const int bell = EventFd();  // the reader's data bell: the peer rings it
  net::ShmStreamOptions options;
  // A spin waits for another thread; here the peer runs only between
  // polls, so it would only slow every input down.
  options.spin = std::chrono::microseconds(0);
  ShmStream stream(io, std::move(*segment), /*server_end=*/true,
                   net::ShmBells{bell, EventFd()},
                   net::ShmBells{EventFd(), EventFd()}, options);
  Reader reader(&stream);
  reader.Start();

  std::string_view pending;  // stream bytes the ring has not taken yet
  bool closed = false;
  bool woke = false;  // an honest peer rang because the reader slept
  while (true) {
    const size_t ran = io.poll();
    if (io.stopped())
      io.restart();
    if (woke && ran == 0)
      Fail("the reader slept through the doorbell it asked for");
    woke = false;
    if (reader.done())
      break;
    if (!pending.empty()) {
      bool wake = false;
      Result<size_t> n = ring.Write(pending.data(), pending.size(), &wake);
      if (n.ok() && *n > 0) {
        pending.remove_prefix(*n);
        if (wake && !script.rude()) {
          Script::RingBell(bell);
          woke = !script.hostile();
        }
        continue;
      }
      // The ring is full (or the peer broke it itself): while the reader
      // moves it may make room; else these bytes can never go.
      if (n.ok() && ran > 0)
        continue;
      if (!script.hostile())
        Fail("an honest peer's bytes did not fit while the reader waited");
      pending = {};
      continue;
    }
    if (script.Next(&peer, &ring, bell, &pending) || ran > 0)
      continue;
    if (!closed) {
      ring.Close();
      Script::RingBell(bell);
      closed = true;
      continue;
    }
    Fail("the reader still waits after the ring closed and the bell rang");
  }

  if (script.hostile())
    return;
  // An honest peer's stream arrives intact: never a corrupt ring, and the
  // reader saw exactly the stream, or its prefix up to a frame it refused.
  if (reader.error() == asio::error::invalid_argument)
    Fail(("an honest peer's ring was found corrupt: " +
          stream.failure().ToString())
             .c_str());
  const std::string_view all = script.stream();
  const std::string& seen = reader.seen();
  if (reader.parser_refused() ? all.substr(0, seen.size()) != seen
                              : all != seen)
    Fail("the reader's bytes differ from those an honest peer wrote");
}

}  // namespace
}  // namespace pstrain::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool checked = (pstrain::fuzz::CheckLayout(), true);
  (void)checked;
  if (size == 0)
    return 0;
  pstrain::fuzz::Run(data, size);
  return 0;
}
