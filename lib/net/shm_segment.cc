#include "net/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace pstrain::net {

namespace {

constexpr uint64_t kMagic = 0x6d68732d6e617274;  // "tran-shm", little-endian
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 4096;
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t reserved;
  uint64_t ring_bytes;
};
constexpr uint64_t kControlAt[2] = {64, 64 + sizeof(ShmRingControl)};
constexpr uint64_t kLinkAt = 64 + 2 * sizeof(ShmRingControl);
static_assert(kLinkAt % alignof(ShmLinkWords) == 0);
static_assert(kLinkAt + sizeof(ShmLinkWords) <= kHeaderBytes);

Status Errno(const std::string& what) {
  return Unavailable("shared memory: " + what + ": " + std::strerror(errno));
}

bool ValidRingBytes(uint64_t n) {
  return n >= ShmRing::kMinBytes && n <= ShmRing::kMaxBytes &&
         (n & (n - 1)) == 0;
}

}  // namespace

Result<ShmSegment> ShmSegment::Create(uint64_t ring_bytes) {
  if (!ValidRingBytes(ring_bytes)) {
    return InvalidArgument("shared-memory ring of " +
                           std::to_string(ring_bytes) +
                           " bytes: expected a power of two in [4 KiB, 1 GiB]");
  }
  const uint64_t size = kHeaderBytes + 2 * ring_bytes;
  const int fd = ::memfd_create("pstrain-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return Errno("memfd_create");
  auto fail = [fd](const std::string& what) {
    Status s = Errno(what);
    ::close(fd);
    return s;
  };
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0)
    return fail("ftruncate");
  // Reserve every page now: a full tmpfs is ENOSPC here, not SIGBUS later.
  if (::posix_fallocate(fd, 0, static_cast<off_t>(size)) != 0)
    return fail("fallocate");
  if (::fcntl(fd, F_ADD_SEALS, kSeals) != 0)
    return fail("seal");
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED)
    return fail("mmap");
  auto* header = static_cast<Header*>(base);
  header->magic = kMagic;
  header->version = kVersion;
  header->ring_bytes = ring_bytes;
  return ShmSegment(static_cast<uint8_t*>(base), size, ring_bytes, fd);
}

Result<ShmSegment> ShmSegment::Attach(int fd) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals) {
    return InvalidArgument(
        "shared memory: the segment handed over is not sealed against "
        "resizing");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kHeaderBytes))
    return InvalidArgument(
        "shared memory: the segment handed over is too small");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t ring_bytes = (size - kHeaderBytes) / 2;
  if (!ValidRingBytes(ring_bytes) || kHeaderBytes + 2 * ring_bytes != size) {
    return InvalidArgument("shared memory: a segment of " +
                           std::to_string(size) +
                           " bytes is not a header and two rings");
  }
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED)
    return Errno("mmap");
  ShmSegment segment(static_cast<uint8_t*>(base), size, ring_bytes, -1);
  const auto* header = static_cast<const Header*>(base);
  if (header->magic != kMagic || header->version != kVersion ||
      header->ring_bytes != ring_bytes) {
    return InvalidArgument(
        "shared memory: the segment handed over has no pstrain header of "
        "version " +
        std::to_string(kVersion));
  }
  return segment;
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept {
  *this = std::move(other);
}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    Release();
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    ring_bytes_ = std::exchange(other.ring_bytes_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  Release();
}

void ShmSegment::CloseFd() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

void ShmSegment::Release() {
  CloseFd();
  if (base_ != nullptr)
    ::munmap(base_, size_);
  base_ = nullptr;
}

ShmLinkWords* ShmSegment::link_words() const {
  return reinterpret_cast<ShmLinkWords*>(base_ + kLinkAt);
}

ShmRing ShmSegment::Ring(ShmDirection d) const {
  const int i = static_cast<int>(d);
  auto* control = reinterpret_cast<ShmRingControl*>(base_ + kControlAt[i]);
  uint8_t* data = base_ + kHeaderBytes + i * ring_bytes_;
  return ShmRing(control, data, ring_bytes_);
}

}  // namespace pstrain::net
