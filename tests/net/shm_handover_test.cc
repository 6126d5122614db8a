// What a shared-memory handover brings the server, checked before it is
// used: the segment (sealed, of the shape its header says) and the four
// doorbells (distinct nonblocking eventfds that have not rung). No sockets.

#include "net/shm_handover.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "net/shm_ring.h"
#include "net/shm_segment.h"

namespace pstrain::net {
namespace {

TEST(ShmSegmentTest, TheServerAttachesToWhatTheWorkerCreated) {
  Result<ShmSegment> created = ShmSegment::Create(64 << 10);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Result<ShmSegment> attached = ShmSegment::Attach(created->fd());
  ASSERT_TRUE(attached.ok()) << attached.status().ToString();
  EXPECT_EQ(attached->ring_bytes(), 64u << 10);
  ShmRing w = created->Ring(ShmDirection::kToServer);
  ShmRing s = attached->Ring(ShmDirection::kToServer);
  bool wake = false;
  ASSERT_EQ(*w.Write("hello", 5, &wake), 5u);
  char buf[5];
  ASSERT_EQ(*s.Read(buf, 5, &wake), 5u);
  EXPECT_EQ(std::string(buf, 5), "hello");
}

TEST(ShmSegmentTest, AnUnsealedOrMisshapenSegmentIsRefused) {
  const int fd = ::memfd_create("not-a-segment", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096 + 2 * 65536), 0);
  Result<ShmSegment> s = ShmSegment::Attach(fd);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not sealed"), std::string::npos)
      << s.status().ToString();
  ::close(fd);
  EXPECT_FALSE(ShmSegment::Create(5000).ok());  // not a power of two
}

TEST(ShmHandoverTest, DoorbellsMustBeDistinctEventfdsThatHaveNotRung) {
  int bells[4];
  for (int& b : bells)
    b = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  EXPECT_TRUE(CheckDoorbells(bells, 4).ok());
  // Each is left as it came: silent.
  uint64_t count;
  for (int b : bells)
    EXPECT_LT(::read(b, &count, sizeof(count)), 0);

  // The server's room bell a second descriptor of its data bell.
  int same[4] = {bells[0], ::dup(bells[0]), bells[2], bells[3]};
  Status s = CheckDoorbells(same, 4);
  EXPECT_EQ(s.ToString(),
            "invalid argument: a handover's doorbells 0 and 1 are one "
            "eventfd, expected distinct ones");
  ::close(same[1]);

  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  int not_bell[4] = {bells[0], bells[1], pipe_fds[0], bells[3]};
  EXPECT_EQ(CheckDoorbells(not_bell, 4).ToString(),
            "invalid argument: a handover's doorbell 2 is not an eventfd");
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);

  const uint64_t one = 1;
  ASSERT_EQ(::write(bells[3], &one, sizeof(one)), 8);
  EXPECT_EQ(CheckDoorbells(bells, 4).ToString(),
            "invalid argument: a handover's doorbell 3 rang before the "
            "handover");
  for (int b : bells)
    ::close(b);
}

// A peer's blocking eventfd is refused before it is read: reading a
// silent one would hold the server's io thread until the peer rang it. A
// watchdog rings them if the check has not returned in 10 s, so the test
// fails rather than hangs.
TEST(ShmHandoverTest, ABlockingDoorbellIsRefusedWithoutBeingRead) {
  int bells[4];
  for (int i = 0; i < 4; ++i)
    bells[i] = ::eventfd(0, (i == 2 ? 0 : EFD_NONBLOCK) | EFD_CLOEXEC);
  std::mutex mu;
  std::condition_variable cv;
  bool returned = false, rang = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10),
                     [&] { return returned; })) {
      rang = true;
      const uint64_t one = 1;
      for (int b : bells)
        (void)!::write(b, &one, sizeof(one));
    }
  });
  Status s = CheckDoorbells(bells, 4);
  {
    std::lock_guard<std::mutex> lock(mu);
    returned = true;
  }
  cv.notify_one();
  watchdog.join();
  EXPECT_FALSE(rang) << "the check blocked on a silent doorbell";
  EXPECT_EQ(s.ToString(),
            "invalid argument: a handover's doorbell 2 blocks, expected a "
            "nonblocking eventfd");
  for (int b : bells)
    ::close(b);
}

}  // namespace
}  // namespace pstrain::net
