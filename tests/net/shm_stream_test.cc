// ShmStream's waits and wake-ups: two streams over one segment in this
// process, a read and a write of each end in flight at once. The first
// test drives one interleaving step by step on one thread; the second
// moves many frames through small rings on two threads under a deadline.

#include "net/shm_stream.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

#include "net/shm_segment.h"

namespace pstrain::net {
namespace {

int EventFd() {
  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  return fd;
}

// The server's end (a) and the worker's (b) of one segment, each on its
// own io_context. Each stream owns its doorbells and a duplicate of the
// peer's, as after a handover.
struct StreamPair {
  // Runs what is ready on end a's (or b's) io_context, which a poll that
  // ran out of work left stopped.
  static void Poll(asio::io_context& io) {
    io.restart();
    io.poll();
  }

  StreamPair(uint64_t ring_bytes, ShmStreamOptions options) {
    Result<ShmSegment> created = ShmSegment::Create(ring_bytes);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    Result<ShmSegment> attached = ShmSegment::Attach(created->fd());
    EXPECT_TRUE(attached.ok()) << attached.status().ToString();
    created->CloseFd();
    const ShmBells a_bells{EventFd(), EventFd()};
    const ShmBells b_bells{EventFd(), EventFd()};
    a = std::make_unique<ShmStream>(
        io_a, std::move(*attached), /*server_end=*/true, a_bells,
        ShmBells{::dup(b_bells.data), ::dup(b_bells.room)}, options);
    b = std::make_unique<ShmStream>(
        io_b, std::move(*created), /*server_end=*/false, b_bells,
        ShmBells{::dup(a_bells.data), ::dup(a_bells.room)}, options);
  }

  asio::io_context io_a;
  asio::io_context io_b;
  std::unique_ptr<ShmStream> a;
  std::unique_ptr<ShmStream> b;
};

ShmStreamOptions NoSpin() {
  ShmStreamOptions options;
  options.spin = std::chrono::microseconds(0);
  options.busy = std::chrono::microseconds(0);
  return options;
}

// A's read R and write W both sleep; B's write wakes R and its read wakes
// W in one turn of A's reactor. R's handler starts the next read R2,
// which sleeps; then, before A's reactor looks again, B writes for R2 and
// W's handler runs. With one doorbell for both purposes, W drained the
// ring meant for R2, and R2 slept on with bytes in its ring and its flag
// down. Each purpose's own doorbell leaves R2's ring to R2.
TEST(ShmStreamTest, AWakeUpForOneOperationIsNeverTakenByTheOther) {
  StreamPair p(4096, NoSpin());
  ShmStream& a = *p.a;
  ShmStream& b = *p.b;

  // A's outgoing ring full, so that its next write waits for room.
  const std::string fill(4096, 'f');
  size_t filled = 0;
  a.async_write_some(asio::buffer(fill),
                     [&](std::error_code, size_t n) { filled = n; });
  StreamPair::Poll(p.io_a);
  ASSERT_EQ(filled, 4096u);

  char r_buf[8];
  char r2_buf[8];
  size_t r_bytes = 0;
  size_t r2_bytes = 0;
  a.async_read_some(asio::buffer(r_buf), [&](std::error_code ec, size_t n) {
    ASSERT_FALSE(ec) << ec.message();
    r_bytes = n;
    a.async_read_some(asio::buffer(r2_buf),
                      [&](std::error_code ec2, size_t n2) {
                        ASSERT_FALSE(ec2) << ec2.message();
                        r2_bytes = n2;
                      });
  });
  const std::string more(100, 'm');
  size_t w_bytes = 0;
  a.async_write_some(asio::buffer(more), [&](std::error_code ec, size_t n) {
    ASSERT_FALSE(ec) << ec.message();
    w_bytes = n;
  });
  StreamPair::Poll(p.io_a);
  ASSERT_EQ(r_bytes, 0u);
  ASSERT_EQ(w_bytes, 0u);

  // Another descriptor of A's, ready before B rings: its handler runs
  // first in the reactor's next turn and posts B's write for R2 behind
  // the reactor's next look, ahead of W's deferred completion.
  const int other = EventFd();
  asio::posix::stream_descriptor other_desc(p.io_a, other);
  const std::string for_r2 = "r2";
  other_desc.async_wait(asio::posix::descriptor_base::wait_read,
                        [&](std::error_code) {
                          asio::post(p.io_a, [&] {
                            b.async_write_some(asio::buffer(for_r2),
                                               [](std::error_code, size_t) {});
                          });
                        });
  const uint64_t one = 1;
  ASSERT_EQ(::write(other, &one, sizeof(one)), 8);

  // B writes for R and reads for W: A's two sleepers are each rung.
  const std::string for_r = "r";
  b.async_write_some(asio::buffer(for_r), [](std::error_code, size_t) {});
  char b_buf[200];
  b.async_read_some(asio::buffer(b_buf), [](std::error_code, size_t) {});
  StreamPair::Poll(p.io_b);

  StreamPair::Poll(p.io_a);
  EXPECT_EQ(r_bytes, 1u);
  EXPECT_EQ(w_bytes, 100u);
  EXPECT_EQ(r2_bytes, 2u) << "the second read slept through its wake-up";
  EXPECT_EQ(std::string(r2_buf, r2_bytes), "r2");
  other_desc.close();
}

std::string Frame(size_t bytes, int round, int side) {
  std::string s(bytes, '\0');
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t v = (uint64_t{static_cast<uint32_t>(round)} << 33) |
                       (uint64_t{static_cast<uint32_t>(side)} << 32) | i;
    std::memcpy(&s[i], &v, std::min<size_t>(8, bytes - i));
  }
  return s;
}

// One end's traffic: `rounds` frames out, as many in, a read always
// posted while its writes go. Reports on `done` whether every frame that
// came in is the peer's, whole and in order.
class Traffic {
 public:
  Traffic(ShmStream* stream, int side, int rounds, size_t frame_bytes)
      : stream_(stream), side_(side), rounds_(rounds), in_(frame_bytes, '\0') {}

  void Start() {
    Write();
    Read();
  }
  std::future<std::string> result() { return done_.get_future(); }

 private:
  void Write() {
    if (written_ == rounds_)
      return Finish();
    out_ = Frame(in_.size(), written_, side_);
    asio::async_write(*stream_, asio::buffer(out_),
                      [this](std::error_code ec, size_t) {
                        if (ec)
                          return Fail("write: " + ec.message());
                        ++written_;
                        Write();
                      });
  }
  void Read() {
    if (read_ == rounds_)
      return Finish();
    asio::async_read(
        *stream_, asio::buffer(in_), [this](std::error_code ec, size_t) {
          if (ec)
            return Fail("read: " + ec.message());
          if (in_ != Frame(in_.size(), read_, 1 - side_))
            return Fail("frame " + std::to_string(read_) + " came in altered");
          ++read_;
          Read();
        });
  }
  void Finish() {
    if (written_ == rounds_ && read_ == rounds_ && !reported_) {
      reported_ = true;
      done_.set_value("");
    }
  }
  void Fail(const std::string& why) {
    if (!reported_) {
      reported_ = true;
      done_.set_value(why);
    }
  }

  ShmStream* stream_;
  int side_;
  int rounds_;
  int written_ = 0;
  int read_ = 0;
  bool reported_ = false;
  std::string out_;
  std::string in_;
  std::promise<std::string> done_;
};

// Both ends write 1 MiB frames through 4 KiB rings while a read of each is
// posted: every frame passes the ring hundreds of times, both operations
// of both ends sleeping and waking throughout. A lost wake-up stalls it.
TEST(ShmStreamTest, BothWaysAtOnceThroughSmallRingsNothingStalls) {
  for (const ShmStreamOptions& options : {NoSpin(), ShmStreamOptions{}}) {
    StreamPair p(4096, options);
    constexpr int kRounds = 200;
    Traffic a(p.a.get(), 0, kRounds, 1 << 20);
    Traffic b(p.b.get(), 1, kRounds, 1 << 20);
    std::future<std::string> a_done = a.result();
    std::future<std::string> b_done = b.result();
    asio::post(p.io_a, [&] { a.Start(); });
    asio::post(p.io_b, [&] { b.Start(); });
    std::thread ta([&] { p.io_a.run(); });
    std::thread tb([&] { p.io_b.run(); });
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    const bool a_in = a_done.wait_until(deadline) == std::future_status::ready;
    const bool b_in = b_done.wait_until(deadline) == std::future_status::ready;
    EXPECT_TRUE(a_in && b_in)
        << "stalled: end a finished " << a_in << ", end b " << b_in;
    if (a_in) {
      EXPECT_EQ(a_done.get(), "");
    }
    if (b_in) {
      EXPECT_EQ(b_done.get(), "");
    }
    // A stalled end's operations complete as aborted once it closes.
    asio::post(p.io_a, [&] { p.a->Close(); });
    asio::post(p.io_b, [&] { p.b->Close(); });
    ta.join();
    tb.join();
  }
}

}  // namespace
}  // namespace pstrain::net
