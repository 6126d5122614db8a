#pragma once
// ShmStream: one end of a shared-memory connection as an Asio stream
// (AsyncReadStream and AsyncWriteStream), so that asio::async_read and
// asio::async_write, and the Connection above them, work on it as on a TCP
// socket. Bytes go through the segment's two rings (net/shm_ring.h, one a
// direction); a side that finds nothing to read (or no room to write)
// yields its core for up to `spin` while it looks again, then sleeps on a
// doorbell, an eventfd in the io_context's epoll set, which the peer rings
// only when our waiting flag is up. So an idle peer costs no CPU, a busy
// exchange costs no system call, and the spin never holds a core that a
// runnable compute thread wants (it yields between looks).
//
// Each end has two doorbells, one per purpose: "data", rung by the peer's
// write, on which our read sleeps, and "room", rung by the peer's read, on
// which our write sleeps. Each operation waits on and drains only its own:
// with one doorbell for both, a read that woke drained a ring meant for a
// write sleeping beside it, and the write slept on with room in its ring
// (share/doc/design.md, "Transports").
//
// The end of the peer is learnt by the Connection's lifeline (the TCP
// socket the connection began on, which the kernel closes when the peer
// dies, SIGKILL included): it calls PeerGone, and reads then take what
// is left in the ring and end with EOF, as on TCP. An orderly close marks
// our outgoing ring closed and rings the peer.
//
// Threading: everything on the io_context's thread, but WriteNow. Not
// copyable or movable (operations in flight point at it).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include <asio/associated_executor.hpp>
#include <asio/buffer.hpp>
#include <asio/compose.hpp>
#include <asio/error.hpp>
#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/post.hpp>

#include "net/shm_segment.h"
#include "net/shm_wait.h"
#include "util/status.h"

namespace pstrain::net {

/// One end's two doorbells, eventfd descriptors (-1: none).
struct ShmBells {
  /// Rung by the peer's write when this end's read sleeps.
  int data = -1;
  /// Rung by the peer's read when this end's write sleeps for room.
  int room = -1;
};

/// What ShmStream::async_wait_readable waits for: `bytes` readable.
struct ShmWant {
  size_t bytes = 0;
};

struct ShmStreamOptions {
  /// How long a side that would wait keeps looking (yielding its core
  /// between looks) before it sleeps on its doorbell. A few round trips of
  /// a small message; longer only burns CPU that a compute thread on a
  /// small machine may want (share/doc/benchmarks.md measures it).
  std::chrono::microseconds spin{50};
  /// The first part of the spin, in which a look does not yield: about a
  /// small message's round trip, so that a reply already on its way is
  /// taken without a system call.
  std::chrono::microseconds busy{5};
};

class ShmStream {
 public:
  using executor_type = asio::io_context::executor_type;

  /// `server_end`: which of the segment's rings is ours to read. `own`:
  /// our doorbells (eventfds), `peer`: the peer's; the stream owns and
  /// closes all four descriptors.
  ShmStream(asio::io_context& io, ShmSegment segment, bool server_end,
            ShmBells own, ShmBells peer, ShmStreamOptions options = {});
  ~ShmStream();
  ShmStream(const ShmStream&) = delete;
  ShmStream& operator=(const ShmStream&) = delete;

  executor_type get_executor() { return io_->get_executor(); }

  /// Asio's AsyncReadStream: completes with the bytes read (at least one),
  /// asio::error::eof once the peer closed or is gone and the ring is
  /// empty, or asio::error::invalid_argument when the ring is corrupt
  /// (failure() says how).
  template <typename MutableBufferSequence, typename Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    return asio::async_compose<Token, void(std::error_code, size_t)>(
        Op<MutableBufferSequence, true>{this, buffers}, token, *io_);
  }
  /// Asio's AsyncWriteStream: completes with the bytes written (at least
  /// one), asio::error::broken_pipe when the peer is gone or closed, or
  /// invalid_argument as above.
  template <typename ConstBufferSequence, typename Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    return asio::async_compose<Token, void(std::error_code, size_t)>(
        Op<ConstBufferSequence, false>{this, buffers}, token, *io_);
  }

  /// Completes once the next `bytes` (at most ring_bytes()) can be read,
  /// with no bytes moved; then PeekRead returns them unless they wrap
  /// round the ring's end. Errors as async_read_some (eof when the peer is
  /// gone first). Waits as a read does, and counts as one.
  template <typename Token>
  auto async_wait_readable(size_t bytes, Token&& token) {
    return asio::async_compose<Token, void(std::error_code, size_t)>(
        Op<ShmWant, true>{this, ShmWant{bytes}}, token, *io_);
  }
  /// The next `bytes` of the incoming ring where they lie, when all are in
  /// and do not wrap; nullptr otherwise (or when the ring is corrupt: the
  /// next read fails). They stay put until SkipRead.
  const uint8_t* PeekRead(size_t bytes);
  /// Drops the next `bytes`, which PeekRead returned, as a read of them
  /// would (waking a writer that waits for room).
  void SkipRead(size_t bytes);

  /// Writes `bytes` (a small frame) whole at once, from any thread, while
  /// no write of this stream is in flight (the caller ensures it).
  /// kUnavailable when the ring has no room for all of it or the peer is
  /// gone; nothing is written then.
  Status WriteNow(std::string_view bytes);
  /// The peer is gone (its lifeline closed): reads drain the ring, then
  /// end; writes fail.
  void PeerGone();
  /// Marks our outgoing ring closed, tells the peer, and cancels our
  /// operations in flight (they complete with operation_aborted).
  void Close();

  /// Why the last operation failed with invalid_argument: the ring's
  /// kCorruption. Ok otherwise.
  const Status& failure() const { return failure_; }
  uint64_t ring_bytes() const { return segment_.ring_bytes(); }
  ShmLinkWords* link_words() const { return segment_.link_words(); }

 private:
  // One attempt: bytes moved, or would_block, or an error to end with.
  struct Attempt {
    std::error_code ec;
    size_t bytes = 0;
    bool would_block = false;
  };

  // The operation: try; while nothing can move, look again from the
  // io_context's queue (other handlers run in between; after `busy`, each
  // look yields the core) until `spin` has passed since the first look; then
  // raise the waiting flag, look once more and sleep on the doorbell. The
  // spin's clock starts at the first look, not when the operation began: a
  // worker starts its next read as it takes a reply, then computes for a
  // while before it runs the io_context again.
  template <typename Buffers, bool kRead>
  struct Op {
    ShmStream* stream;
    Buffers buffers;
    enum class State {
      kStart,
      kSpinning,
      kWaiting,
      kDone
    } state = State::kStart;
    std::chrono::steady_clock::time_point spin_until{};
    std::chrono::steady_clock::time_point busy_until{};
    Attempt result{};
    ShmWaitCounts counts{};
    // How long the last look's yield took; -1: it did not yield.
    std::chrono::nanoseconds yield_took{-1};

    template <typename Self>
    void Complete(Self& self, std::error_code ec, size_t bytes) {
      counts.ops = 1;
      stream->Count(counts);
      self.complete(ec, bytes);
    }

    template <typename Self>
    void operator()(Self& self, std::error_code ec = {}) {
      if (state == State::kDone)
        return Complete(self, result.ec, result.bytes);
      const bool initiating = state == State::kStart;
      if (!initiating)
        ++counts.looks;
      if (state == State::kWaiting) {
        if (ec && (stream->closed_ || ec != asio::error::operation_aborted))
          return Complete(self, ec, 0);
        // Drained before the look, so that a ring after it wakes the
        // next sleep rather than being lost.
        stream->DrainBell(kRead);
      }
      result = stream->Try<kRead>(buffers);
      bool keep_looking = true;
      if (yield_took.count() >= 0) {
        keep_looking =
            stream->Policy(kRead).Yielded(yield_took, !result.would_block);
        yield_took = std::chrono::nanoseconds(-1);
      }
      if (result.would_block && state == State::kSpinning && !stream->closed_) {
        auto now = std::chrono::steady_clock::now();
        if (spin_until == std::chrono::steady_clock::time_point{}) {
          const ShmWaitPlan plan = stream->Policy(kRead).Begin();
          spin_until = now + plan.spin;
          busy_until = now + plan.busy;
        }
        if (keep_looking && now < spin_until) {
          if (now >= busy_until) {
            ++counts.yields;
            std::this_thread::yield();
            yield_took = std::chrono::steady_clock::now() - now;
          }
          auto ex = stream->get_executor();
          return asio::post(ex, std::move(self));
        }
      } else if (result.would_block && initiating &&
                 stream->options_.spin.count() > 0 && !stream->closed_) {
        state = State::kSpinning;
        auto ex = stream->get_executor();
        return asio::post(ex, std::move(self));
      }
      if (result.would_block) {
        // About to sleep: raise the flag, then look once more
        // (net/shm_ring.h).
        stream->RaiseFlag(kRead);
        result = stream->Try<kRead>(buffers);
        if (result.would_block) {
          state = State::kWaiting;
          ++counts.sleeps;
          stream->Bell(kRead).async_wait(
              asio::posix::descriptor_base::wait_read, std::move(self));
          return;
        }
      }
      state = State::kDone;
      if (initiating) {
        // Asio never completes an operation inside the call that starts
        // it; the result goes through the queue.
        auto ex = stream->get_executor();
        return asio::post(ex, std::move(self));
      }
      Complete(self, result.ec, result.bytes);
    }
  };

  ShmWaitPolicy& Policy(bool read) {
    return read ? read_policy_ : write_policy_;
  }
  void RaiseFlag(bool read) {
    if (read)
      rx_.ConsumerWaits();
    else
      tx_.ProducerWaits();
  }

  template <bool kRead, typename Buffers>
  Attempt Try(const Buffers& buffers) {
    if constexpr (std::is_same_v<Buffers, ShmWant>)
      return TryWant(buffers, /*at_end=*/false);
    else
      return TryBuffers<kRead>(buffers, /*at_end=*/false);
  }

  template <bool kRead, typename Buffers>
  Attempt TryBuffers(const Buffers& buffers, bool at_end) {
    Attempt a;
    // As on a socket, an operation on no bytes completes at once.
    if (asio::buffer_size(buffers) == 0)
      return a;
    for (auto it = asio::buffer_sequence_begin(buffers);
         it != asio::buffer_sequence_end(buffers); ++it) {
      if (it->size() == 0)
        continue;
      size_t n;
      if constexpr (kRead)
        n = Move(&rx_, it->data(), nullptr, it->size(), &a);
      else
        n = Move(&tx_, nullptr, it->data(), it->size(), &a);
      a.bytes += n;
      if (a.ec || n < it->size())
        break;
    }
    if (a.ec || a.bytes > 0)
      return a;
    End(kRead, &a);
    if constexpr (kRead) {
      // The peer may have written its last bytes and closed between our
      // look at the ring and our look at its end: look once more.
      if (a.ec == asio::error::eof && !at_end)
        return TryBuffers<kRead>(buffers, /*at_end=*/true);
    }
    return a;
  }

  // Whether want.bytes are readable: done with no bytes, or at the end,
  // or would block.
  Attempt TryWant(const ShmWant& want, bool at_end);
  // Copies between one buffer and a ring (dst set: a read); rings the
  // peer's doorbell of that purpose when its flag asked for it.
  size_t Move(ShmRing* ring, void* dst, const void* src, size_t size,
              Attempt* a);
  // Nothing moved: at the end (EOF, broken pipe), or wait.
  void End(bool read, Attempt* a);
  static void Ring(int bell);
  // The doorbell a read (or a write) sleeps on.
  asio::posix::stream_descriptor& Bell(bool read) {
    return read ? data_bell_ : room_bell_;
  }
  void DrainBell(bool read);
  void CancelWaits();
  void Count(const ShmWaitCounts& op) { AddShmWaitTotals(server_end_, op); }

  asio::io_context* io_;
  ShmSegment segment_;
  ShmRing rx_;
  ShmRing tx_;
  asio::posix::stream_descriptor data_bell_;
  asio::posix::stream_descriptor room_bell_;
  ShmBells peer_;
  ShmStreamOptions options_;
  ShmWaitPolicy read_policy_;
  ShmWaitPolicy write_policy_;
  bool server_end_;
  bool peer_gone_ = false;
  bool closed_ = false;
  Status failure_;
};

}  // namespace pstrain::net
