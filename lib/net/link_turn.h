#pragma once
// LinkTurn: one connection's place in its host's link order, where the
// pushes that leave a host for another go before the replies that leave
// it for another. Each direction of a link between two hosts that both
// compute carries one host's pushes and the other host's replies, and a
// push gates work on the other direction (its server's reply back) where a
// reply gates only its worker's cores: serving the pushes first is
// Jackson's rule for a two-machine job shop (J. R. Jackson, "An extension
// of Johnson's results on job lot scheduling", Naval Research Logistics
// Quarterly 3, 1956: on each machine, first the jobs that start there).
// Shared by the link's flows whatever process they come from: a worker
// counts the unwritten bytes of its pushes to other hosts into the words
// it shares with its own host's server (ShmLinkWords, in the segment of
// their shared-memory connection), and that server holds each further
// group of a tagged reply to another host while a worker of its host has
// such bytes underway.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace pstrain::net {

/// The words a worker and its host's server share for the link order,
/// in their shared-memory segment's header (net/shm_segment.h). Written by
/// the worker, read by the server, which trusts nothing in them but to
/// hold a reply for at most LinkTurn::kMaxHold.
struct ShmLinkWords {
  alignas(64) std::atomic<int64_t> push_bytes;  // written, not yet sent
  std::atomic<int64_t> progress_ns;             // steady clock, last write
  std::atomic<uint64_t> push_round;             // its gradients' version
};
static_assert(std::atomic<int64_t>::is_always_lock_free,
              "the link's words must be lock-free to be shared");

class LinkTurn {
 public:
  using Clock = std::chrono::steady_clock;
  /// A push whose last write is older than this is not underway: its
  /// worker is stopped, or its gradients are not yet made (its bytes
  /// would not use the link meanwhile).
  static constexpr std::chrono::milliseconds kStale{50};
  /// The longest one reply frame waits for pushes in all, so that words
  /// a peer never clears cannot stall its server's replies.
  static constexpr std::chrono::milliseconds kMaxHold{1000};
  /// How long a held reply waits before it asks again.
  static constexpr std::chrono::milliseconds kPoll{1};

  /// Worker end: the frames of this connection are pushes to another
  /// host; their bytes count into `words`, which the pointer keeps mapped
  /// (nullptr: not counted).
  void CountInto(std::shared_ptr<ShmLinkWords> words) {
    Ended();
    words_ = std::move(words);
  }
  /// A frame of `bytes` starts, is written `bytes` more, ends (written
  /// or failed: what it did not write stops counting).
  void Started(uint64_t bytes, Clock::time_point now);
  void Wrote(uint64_t bytes, Clock::time_point now);
  /// Server end too: the next frame's wait starts from nothing.
  void Ended();

  /// The round of the frames written next: at the worker end, the
  /// version its pushes' gradients were computed on; at the server end,
  /// the version its reply carries, which ends the round before it. A
  /// sync step waits for its slowest worker, so a reply that ends a round
  /// goes before a push of a later round, and only a push of an earlier
  /// round (or the same one) holds it.
  void set_round(uint64_t round) { round_ = round; }
  /// Server end: the tagged frames of this connection wait, group by
  /// group, while `underway(now, round)` is true.
  void HoldWhile(std::function<bool(Clock::time_point, uint64_t)> underway) {
    underway_ = std::move(underway);
  }
  bool holds() const { return static_cast<bool>(underway_); }
  /// Whether the next group waits (kPoll, then asks again): a push is
  /// underway and this frame has waited less than kMaxHold in all.
  bool Hold(Clock::time_point now);

 private:
  std::shared_ptr<ShmLinkWords> words_;
  int64_t counted_ = 0;  // this frame's bytes still in *words_
  uint64_t round_ = 0;
  std::function<bool(Clock::time_point, uint64_t)> underway_;
  Clock::time_point held_since_{};
};

/// Whether `words` say a push of gradients computed on a version below
/// `reply_round` is underway at `now`: bytes unwritten and a write within
/// LinkTurn::kStale.
bool PushUnderway(const ShmLinkWords& words, LinkTurn::Clock::time_point now,
                  uint64_t reply_round);

}  // namespace pstrain::net
