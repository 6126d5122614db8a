#include "net/link_turn.h"

#include <algorithm>

namespace pstrain::net {

namespace {

int64_t Nanos(LinkTurn::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             t.time_since_epoch())
      .count();
}

}  // namespace

void LinkTurn::Started(uint64_t bytes, Clock::time_point now) {
  if (words_ == nullptr)
    return;
  Ended();  // a frame that never said so
  counted_ = static_cast<int64_t>(bytes);
  words_->push_round.store(round_, std::memory_order_relaxed);
  words_->push_bytes.fetch_add(counted_, std::memory_order_relaxed);
  words_->progress_ns.store(Nanos(now), std::memory_order_relaxed);
}

void LinkTurn::Wrote(uint64_t bytes, Clock::time_point now) {
  if (words_ == nullptr || counted_ == 0)
    return;
  const int64_t n = std::min(counted_, static_cast<int64_t>(bytes));
  counted_ -= n;
  words_->push_bytes.fetch_sub(n, std::memory_order_relaxed);
  words_->progress_ns.store(Nanos(now), std::memory_order_relaxed);
}

void LinkTurn::Ended() {
  if (words_ != nullptr && counted_ != 0)
    words_->push_bytes.fetch_sub(counted_, std::memory_order_relaxed);
  counted_ = 0;
  held_since_ = {};
}

bool LinkTurn::Hold(Clock::time_point now) {
  if (!underway_ || !underway_(now, round_))
    return false;
  if (held_since_ == Clock::time_point{})
    held_since_ = now;
  return now - held_since_ < kMaxHold;
}

bool PushUnderway(const ShmLinkWords& words, LinkTurn::Clock::time_point now,
                  uint64_t reply_round) {
  // Unsigned: a time the peer wrote in the future (or any garbage) is a
  // long time ago, never an overflow.
  const uint64_t since =
      static_cast<uint64_t>(Nanos(now)) -
      static_cast<uint64_t>(words.progress_ns.load(std::memory_order_relaxed));
  const auto stale = std::chrono::nanoseconds(LinkTurn::kStale).count();
  return words.push_bytes.load(std::memory_order_relaxed) > 0 &&
         words.push_round.load(std::memory_order_relaxed) < reply_round &&
         since < static_cast<uint64_t>(stale);
}

}  // namespace pstrain::net
