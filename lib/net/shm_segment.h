#pragma once
// ShmSegment: the memory one shared-memory connection lives in, two rings
// (net/shm_ring.h), one a direction. The worker's end creates it as a
// memfd (no name in any file system, so a killed process leaves nothing
// behind: the memory goes with the last mapping), sealed against shrinking
// or growing so that the peer cannot make our accesses fault (SIGBUS), and
// with all its pages reserved up front so that a full tmpfs is an error
// here rather than a fault later. The server's end attaches to the
// descriptor it was handed (net/shm_handover.h) after checking those seals
// and the layout. Move-only; unmaps on destruction.
//
// Layout: a 4 KiB page of header, ring controls and the link's words
// (net/link_turn.h), then the data of the
// ring to the server, then that of the ring to the worker, each
// ring_bytes.

#include <cstdint>

#include "net/link_turn.h"
#include "net/shm_ring.h"
#include "util/result.h"

namespace pstrain::net {

enum class ShmDirection { kToServer = 0, kToClient = 1 };

class ShmSegment {
 public:
  /// The default ring, in bytes, of each direction: large enough that a
  /// megabyte-sized frame is written without waiting for the reader, small
  /// enough that a server with tens of workers keeps little memory in rings.
  static constexpr uint64_t kDefaultRingBytes = uint64_t{4} << 20;

  /// A new segment with two rings of `ring_bytes` (a power of two in
  /// ShmRing's bounds). kUnavailable naming the call that failed (no
  /// memfd in this kernel or container, no memory left in tmpfs): the
  /// caller goes on over TCP.
  static Result<ShmSegment> Create(uint64_t ring_bytes = kDefaultRingBytes);
  /// Maps the segment behind `fd` (another process's Create), which stays
  /// the caller's to close. kInvalidArgument when it is not one: no seals
  /// against resizing, a size or header that is not a segment's.
  static Result<ShmSegment> Attach(int fd);

  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  /// The descriptor of a segment this process created, to hand over; -1
  /// after Attach or once CloseFd ran.
  int fd() const { return fd_; }
  /// Closes the descriptor; the mapping stays.
  void CloseFd();

  /// The words the worker and the server share for their host's link
  /// order (net/link_turn.h), in the header; zero in a new segment.
  ShmLinkWords* link_words() const;
  /// The ring of direction `d`, over this mapping (which must outlive it).
  ShmRing Ring(ShmDirection d) const;
  uint64_t ring_bytes() const { return ring_bytes_; }
  /// Bytes mapped.
  uint64_t size() const { return size_; }

 private:
  ShmSegment(uint8_t* base, uint64_t size, uint64_t ring_bytes, int fd)
      : base_(base), size_(size), ring_bytes_(ring_bytes), fd_(fd) {}
  void Release();

  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t ring_bytes_ = 0;
  int fd_ = -1;
};

}  // namespace pstrain::net
