// Peers that stall: one that stops in the middle of a frame header, one
// that stops in the middle of a body, one that connects and says nothing.
// Each is dropped once --timeout has passed, while a real worker trains
// through it all, undisturbed.

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"
#include "wire/messages.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;
using Clock = std::chrono::steady_clock;

// Connects to 127.0.0.1:port (where the server listens), writes `bytes`,
// then reads until the server closes; returns the seconds from the write to
// the close, or -1 if it cannot connect or the server never closes within
// 30 s.
double SecondsUntilDropped(int port, const std::string& bytes) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  asio::ip::tcp::resolver resolver(io);
  asio::error_code ec;
  asio::connect(s, resolver.resolve("127.0.0.1", std::to_string(port)), ec);
  if (ec)
    return -1;
  asio::write(s, asio::buffer(bytes), ec);
  const auto start = Clock::now();
  timeval tv{30, 0};
  setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[256];
  while (!ec)
    s.read_some(asio::buffer(buf), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again)
    return -1;
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(StallTest, StalledPeersAreDroppedAfterTheTimeoutWhileWorkersTrain) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 50);
  auto world = [&](int port) {
    return std::vector<std::string>{"--world_size",  "2",
                                    "--master_addr", "127.0.0.1",
                                    "--master_port", std::to_string(port),
                                    "--data_dir",    dir.path()};
  };
  Process serve(Concat({PstrainBin(), "serve", "--model", "mlp", "--max_steps",
                        "40", "--batch_size", "8", "--timeout", "2", "--json",
                        "--checkpoint", dir.File("m.pt")},
                       world(0)));
  const int port = serve.ListenPort(30);
  // The worker as soon as the server listens, on the port it reports; it
  // trains (100 ms a step) while the peers stall, and holds before step 30
  // until they have been dropped.
  const std::string go = dir.File("go");
  Process work(Concat(
      {PstrainTestingBin(), "work", "--rank", "1", "--timeout", "30",
       "--delay_ms", "100", "--hold_before_step", "30", "--hold_until", go},
      world(port)));
  ASSERT_TRUE(serve.WaitForErr("rank 1 joined", 60)) << serve.OutSoFar();
  std::string hello_meta, hello;
  wire::EncodeMeta(wire::Hello{wire::Role::kWorker, 1, 2}, &hello_meta);
  wire::EncodeFramePrefix(wire::MsgType::kHello, 1, hello_meta, 0, &hello);
  double half_header = 0, half_body = 0, silent = 0;
  std::thread a(
      [&] { half_header = SecondsUntilDropped(port, hello.substr(0, 10)); });
  std::thread b(
      [&] { half_body = SecondsUntilDropped(port, hello.substr(0, 35)); });
  std::thread c([&] { silent = SecondsUntilDropped(port, ""); });
  a.join();
  b.join();
  c.join();
  std::ofstream(go).close();
  for (double t : {half_header, half_body, silent}) {
    EXPECT_GT(t, 1.5);  // not before the timeout...
    EXPECT_LT(t, 5.0);  // ...and soon after it
  }
  auto rw = work.Wait(60);
  EXPECT_EQ(rw.exit_code, 0) << rw.err;
  auto rs = serve.Wait(60);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_EQ(FindEvent(rs.out, "summary")["steps"], 40);
  size_t stalled = 0;
  for (size_t at = rs.err.find("a frame stalled mid-way for more than 2 s");
       at != std::string::npos;
       at = rs.err.find("a frame stalled mid-way for more than 2 s", at + 1)) {
    ++stalled;
  }
  EXPECT_EQ(stalled, 2u) << rs.err;
  EXPECT_NE(rs.err.find("no handshake within 2 s"), std::string::npos)
      << rs.err;
}

}  // namespace
}  // namespace pstrain::testing
