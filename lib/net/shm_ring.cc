#include "net/shm_ring.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "util/check.h"

namespace pstrain::net {

ShmRing::ShmRing(ShmRingControl* control, uint8_t* data, uint64_t capacity)
    : control_(control), data_(data), capacity_(capacity) {
  PS_CHECK(capacity >= kMinBytes && capacity <= kMaxBytes &&
           (capacity & (capacity - 1)) == 0)
      << "ring of " << capacity << " bytes";
}

Result<uint64_t> ShmRing::Readable() const {
  // seq_cst, not acquire: after ConsumerWaits this is the look that must
  // see a write whose producer then missed our flag (the Dekker pattern
  // needs both of each side's accesses sequentially consistent).
  const uint64_t head = control_->head.load();
  const uint64_t avail = head - tail_;
  if (avail > capacity_) {
    return Corruption("shared-memory ring: the peer claims " +
                      std::to_string(avail) + " bytes in a ring of " +
                      std::to_string(capacity_));
  }
  return avail;
}

Result<uint64_t> ShmRing::Writable() const {
  // seq_cst, as in Readable.
  const uint64_t tail = control_->tail.load();
  const uint64_t used = head_ - tail;
  if (used > capacity_) {
    return Corruption("shared-memory ring: the peer read to " +
                      std::to_string(tail) + ", past the " +
                      std::to_string(head_) + " bytes written");
  }
  return capacity_ - used;
}

Result<size_t> ShmRing::Write(const void* src, size_t size, bool* wake) {
  *wake = false;
  PS_ASSIGN_OR_RETURN(uint64_t room, Writable());
  const size_t n = static_cast<size_t>(std::min<uint64_t>(room, size));
  if (n == 0)
    return n;
  const uint64_t at = head_ & (capacity_ - 1);
  const size_t first =
      static_cast<size_t>(std::min<uint64_t>(n, capacity_ - at));
  std::memcpy(data_ + at, src, first);
  std::memcpy(data_, static_cast<const uint8_t*>(src) + first, n - first);
  head_ += n;
  control_->head.store(head_);  // seq_cst: before the flag is read
  if (control_->consumer_waiting.load() != 0 &&
      control_->consumer_waiting.exchange(0) != 0)
    *wake = true;
  return n;
}

Result<const uint8_t*> ShmRing::Peek(size_t size) const {
  PS_ASSIGN_OR_RETURN(uint64_t avail, Readable());
  const uint64_t at = tail_ & (capacity_ - 1);
  if (avail < size || at + size > capacity_)
    return static_cast<const uint8_t*>(nullptr);
  return static_cast<const uint8_t*>(data_ + at);
}

void ShmRing::Skip(size_t size, bool* wake) {
  tail_ += size;
  Published(wake);
}

void ShmRing::Published(bool* wake) {
  control_->tail.store(tail_);  // seq_cst: before the flag is read
  *wake = control_->producer_waiting.load() != 0 &&
          control_->producer_waiting.exchange(0) != 0;
}

Result<size_t> ShmRing::Read(void* dst, size_t size, bool* wake) {
  *wake = false;
  PS_ASSIGN_OR_RETURN(uint64_t avail, Readable());
  const size_t n = static_cast<size_t>(std::min<uint64_t>(avail, size));
  if (n == 0)
    return n;
  const uint64_t at = tail_ & (capacity_ - 1);
  const size_t first =
      static_cast<size_t>(std::min<uint64_t>(n, capacity_ - at));
  std::memcpy(dst, data_ + at, first);
  std::memcpy(static_cast<uint8_t*>(dst) + first, data_, n - first);
  tail_ += n;
  Published(wake);
  return n;
}

}  // namespace pstrain::net
