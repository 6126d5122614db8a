#pragma once
// ShmRing: one direction of a shared-memory connection, a single-producer
// single-consumer byte ring in memory that two processes map. Each end
// keeps its own position in a local variable and only publishes it, so a
// peer that scribbles over the shared words cannot move ours; what it can
// do (claim more bytes than the ring holds, or a position behind ours) is
// found on the next call and returned as kCorruption. Headers and metas
// are copied out before anything reads them (the frame parser sees our
// copy, never memory the peer can still change); only a push's raw values
// are read where they lie (Peek), by code that any bits of them leave
// safe (net/connection.h, Handler::OnPieceAt).
//
// Sleeping and waking (the Dekker pattern on two flags): an end about to
// sleep sets its waiting flag, then looks at the ring once more; the other
// end publishes its position, then reads the flag and, when set, clears it
// and rings the sleeper's doorbell (net/shm_stream.h). All four accesses
// (the flag's store and the position's load on one side, the position's
// store and the flag's load on the other) are sequentially consistent, so
// they fall in one total order and one of the two sides always sees the
// other. An acquire load after the flag's store would not do: C++ does not
// order a store before a later load of another variable unless both are
// seq_cst. Not thread-safe: one thread per end.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "util/result.h"

namespace pstrain::net {

/// The words both ends share, one cache line each so that the producer's
/// and the consumer's writes do not contend.
struct ShmRingControl {
  alignas(64) std::atomic<uint64_t> head;  // bytes ever written (producer)
  alignas(64) std::atomic<uint64_t> tail;  // bytes ever read (consumer)
  alignas(64) std::atomic<uint32_t> consumer_waiting;
  std::atomic<uint32_t> producer_waiting;
  std::atomic<uint32_t> closed;  // the producer will write no more
};
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "the ring's words must be lock-free to be shared");

class ShmRing {
 public:
  /// Smallest and largest data area, in bytes (a power of two between).
  static constexpr uint64_t kMinBytes = 4096;
  static constexpr uint64_t kMaxBytes = uint64_t{1} << 30;

  /// An end over `control` and `capacity` bytes at `data` (a power of two
  /// in [kMinBytes, kMaxBytes]); both stay owned by the caller (the
  /// mapping) and must outlive the ring. A fresh ring is zeroed memory.
  ShmRing(ShmRingControl* control, uint8_t* data, uint64_t capacity);

  /// Producer: copies up to `size` bytes from `src` in; returns how many
  /// fit (0 when full). *wake is set when the consumer sleeps and must be
  /// woken. kCorruption when the consumer's position is impossible.
  Result<size_t> Write(const void* src, size_t size, bool* wake);
  /// Consumer: copies up to `size` bytes out to `dst`; returns how many
  /// (0 when empty). *wake is set when the producer waits for room.
  /// kCorruption when the producer claims more than the ring holds.
  Result<size_t> Read(void* dst, size_t size, bool* wake);

  /// Consumer: the next `size` bytes where they lie in the ring, when all
  /// are readable and they do not wrap round its end; nullptr otherwise.
  /// They stay put until Skip (a producer writes only past what it
  /// published). kCorruption as Read.
  Result<const uint8_t*> Peek(size_t size) const;
  /// Consumer: drops the next `size` bytes, which Peek returned; *wake as
  /// Read.
  void Skip(size_t size, bool* wake);

  /// Bytes the consumer could read now, or kCorruption as Read.
  Result<uint64_t> Readable() const;
  /// Bytes the producer could write now, or kCorruption as Write.
  Result<uint64_t> Writable() const;

  /// The consumer is going to sleep: sets its flag (seq_cst); then the
  /// caller must check Readable() (a seq_cst load) again before sleeping.
  void ConsumerWaits() { control_->consumer_waiting.store(1); }
  /// The producer is going to sleep, as ConsumerWaits.
  void ProducerWaits() { control_->producer_waiting.store(1); }
  /// Producer: no more bytes will come (an orderly close).
  void Close() { control_->closed.store(1); }
  /// Consumer: whether the producer closed.
  bool closed() const { return control_->closed.load() != 0; }
  uint64_t capacity() const { return capacity_; }

 private:
  // The consumer's tail is published; *wake when the producer waits.
  void Published(bool* wake);

  ShmRingControl* control_;
  uint8_t* data_;
  uint64_t capacity_;
  uint64_t head_ = 0;  // the producer's own position
  uint64_t tail_ = 0;  // the consumer's own position
};

}  // namespace pstrain::net
