#pragma once
// Traffic: what one Connection has moved, and since when the frame on its
// way each direction has been: the bytes read and written (headers
// included), and whether a frame has been on its way for too long, which
// the owner's watchdog asks (StalledFor). A frame is on its way in from its
// first byte to its last, and out from the start of its write until its last
// byte is taken, but not while it waits on its own gate (the sender's data is
// not made yet: no fault of the peer's). Idle time between frames never
// counts: a worker may compute for long. Owns no I/O; the Connection tells it
// what happened, with the time. Not thread-safe: the Connection's thread.

#include <chrono>
#include <cstdint>

namespace pstrain::net {

class Traffic {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  /// A frame's first bytes came in at `now`.
  void ReadStarted(TimePoint now) { reading_since_ = now; }
  /// The frame read is whole (or none is on its way in).
  void ReadEnded() { reading_since_ = {}; }
  /// Whether a frame has come in partly.
  bool reading() const { return reading_since_ != TimePoint{}; }
  /// A frame's write started, or went on after a wait for its gate, at
  /// `now`.
  void WriteStarted(TimePoint now) { writing_since_ = now; }
  /// No frame is being written, or the one being written waits for its
  /// gate.
  void WriteEnded() { writing_since_ = {}; }
  /// Since when the frame being written has been on its way; the epoch
  /// while none is.
  TimePoint writing_since() const { return writing_since_; }

  /// Some bytes came in (a frame's piece, of any size): the peer is
  /// heard even while one large frame takes long to arrive.
  void Arrived() { ++arrivals_; }
  /// How many times bytes came in; grows while the peer is heard.
  uint64_t arrivals() const { return arrivals_; }
  void Read(uint64_t bytes) { bytes_read_ += bytes; }
  void Wrote(uint64_t bytes) { bytes_written_ += bytes; }
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t bytes_written() const { return bytes_written_; }

  /// Whether a frame has been on its way, in or out, for longer than
  /// `limit` at `now`.
  bool StalledFor(TimePoint now, std::chrono::milliseconds limit) const {
    return (reading() && now - reading_since_ > limit) ||
           (writing_since_ != TimePoint{} && now - writing_since_ > limit);
  }

 private:
  uint64_t arrivals_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t bytes_written_ = 0;
  // The epoch (zero) while no frame is on its way.
  TimePoint reading_since_{};
  TimePoint writing_since_{};
};

}  // namespace pstrain::net
