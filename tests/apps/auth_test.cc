// --auth_token_file with real processes: without the token, or with a wrong
// one, a connection gets no further than the challenge; with it, training
// is exactly what it is without authentication.

#include "net/auth.h"

#include <fstream>
#include <sstream>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

#include "job_test.h"
#include "net/shm_handover.h"
#include "testing/idx_files.h"
#include "wire/frame_reader.h"
#include "wire/messages.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// A raw TCP peer that sends frames and reads back every frame the server
// sends until it closes the connection. `port`: one a server listens on.
class RawPeer {
 public:
  explicit RawPeer(int port) : socket_(io_) {
    asio::ip::tcp::resolver resolver(io_);
    asio::error_code ec;
    asio::connect(socket_, resolver.resolve("127.0.0.1", std::to_string(port)),
                  ec);
    EXPECT_FALSE(ec) << ec.message();
  }
  template <typename Msg>
  void Send(const Msg& msg) {
    std::string meta, frame;
    wire::EncodeMeta(msg, &meta);
    wire::EncodeFramePrefix(wire::TypeOf(msg), 1, meta, 0, &frame);
    asio::write(socket_, asio::buffer(frame));
  }
  void SendBytes(const std::string& bytes) {
    asio::write(socket_, asio::buffer(bytes));
  }
  // The next frame's type and meta; false once the server closed.
  bool Next(wire::MsgType* type, std::string* meta) {
    char buf[4096];
    for (;;) {
      std::string_view in(pending_);
      auto state = reader_.Feed(&in);
      pending_.erase(0, pending_.size() - in.size());
      if (state == wire::FrameReader::State::kFrame) {
        *type = reader_.header().type;
        meta->assign(reader_.meta());
        return true;
      }
      EXPECT_NE(state, wire::FrameReader::State::kError)
          << reader_.status().ToString();
      asio::error_code ec;
      const size_t n = socket_.read_some(asio::buffer(buf), ec);
      if (ec)
        return false;
      pending_.append(buf, n);
    }
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  wire::FrameReader reader_;
  std::string pending_;
};

std::string ErrorText(const std::string& meta) {
  wire::ErrorMsg err;
  EXPECT_TRUE(wire::DecodeMeta(meta, &err).ok());
  return err.message;
}

class AuthJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data::testing::WriteTinyDataset(dir_.path(), 320, 50);
    std::ofstream(dir_.File("token")) << "correct horse battery staple\n";
    std::ofstream(dir_.File("wrong")) << "incorrect horse\n";
  }
  std::vector<std::string> Serve(int port, const std::string& token_file,
                                 const std::string& checkpoint) {
    std::vector<std::string> a = {
        PstrainBin(),    "serve",     "--model",       "mlp",
        "--max_steps",   "3",         "--batch_size",  "8",
        "--timeout",     "20",        "--world_size",  "2",
        "--master_addr", "127.0.0.1", "--master_port", std::to_string(port),
        "--data_dir",    dir_.path(), "--checkpoint",  dir_.File(checkpoint)};
    if (!token_file.empty())
      a = Concat(a, {"--auth_token_file", token_file});
    return a;
  }
  std::vector<std::string> Work(int port, const std::string& token_file) {
    std::vector<std::string> a = {PstrainBin(),    "work",
                                  "--rank",        "1",
                                  "--world_size",  "2",
                                  "--master_addr", "127.0.0.1",
                                  "--master_port", std::to_string(port),
                                  "--data_dir",    dir_.path(),
                                  "--timeout",     "20"};
    if (!token_file.empty())
      a = Concat(a, {"--auth_token_file", token_file});
    return a;
  }
  ScratchDir dir_;
};

// The abstract name of `pid`'s shared-memory handover socket, as any
// process on the host can read it from /proc/net/unix; "" if none.
std::string HandoverSocketOf(pid_t pid) {
  std::ifstream in("/proc/net/unix");
  const std::string prefix = "@pstrain-shm-" + std::to_string(pid) + "-";
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(prefix);
    if (at != std::string::npos)
      return line.substr(at + 1);
  }
  return "";
}

// Without the token no process gets a ticket for a segment, and one that
// finds the handover socket (its name is public) and guesses a cookie is
// refused: the server maps nothing.
TEST_F(AuthJobTest, WithoutTheTokenNoProcessAttachesASegment) {
  Process serve(Serve(0, dir_.File("token"), "served.pt"));
  const int port = serve.ListenPort(30);
  wire::MsgType type;
  std::string meta;
  {
    RawPeer peer(port);
    peer.Send(wire::ShmOffer{net::HostIdentity()});
    ASSERT_TRUE(peer.Next(&type, &meta));
    EXPECT_EQ(type, wire::MsgType::kError);
    EXPECT_EQ(ErrorText(meta),
              "authentication required: expected auth_hello first, got "
              "shm_offer");
    EXPECT_FALSE(peer.Next(&type, &meta));
  }
  const std::string name = HandoverSocketOf(serve.pid());
  ASSERT_FALSE(name.empty());
  asio::io_context io;
  auto stream = net::ConnectShm(io, name, std::string(32, '0'),
                                std::chrono::milliseconds(5000));
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.status().message(),
            "shared memory: the server refused the handover");
  EXPECT_EQ(MappedShmSegments(serve.pid()), 0);
  // A worker with the token then trains over shared memory as usual.
  Process work(Work(port, dir_.File("token")));
  auto rw = work.Wait(60);
  EXPECT_EQ(rw.exit_code, 0) << rw.err;
  EXPECT_NE(rw.err.find("to rank 0: shared memory"), std::string::npos)
      << rw.err;
  EXPECT_EQ(serve.Wait(60).exit_code, 0);
}

TEST_F(AuthJobTest, WithoutOrWithAWrongTokenNothingPassesTheChallenge) {
  Process serve(Serve(0, dir_.File("token"), "served.pt"));
  const int port = serve.ListenPort(30);
  wire::MsgType type;
  std::string meta;
  {  // straight to hello: one error frame, then the server closes
    RawPeer peer(port);
    peer.Send(wire::Hello{wire::Role::kWorker, 1, 2});
    ASSERT_TRUE(peer.Next(&type, &meta));
    EXPECT_EQ(type, wire::MsgType::kError);
    EXPECT_EQ(ErrorText(meta),
              "authentication required: expected auth_hello first, got hello");
    EXPECT_FALSE(peer.Next(&type, &meta));
  }
  {  // a wrong proof: the challenge, an error, then the server closes
    RawPeer peer(port);
    peer.Send(wire::AuthHello{net::NewNonce()});
    ASSERT_TRUE(peer.Next(&type, &meta));
    EXPECT_EQ(type, wire::MsgType::kChallenge);
    peer.Send(wire::Auth{std::string(32, 'x')});
    ASSERT_TRUE(peer.Next(&type, &meta));
    EXPECT_EQ(type, wire::MsgType::kError);
    EXPECT_EQ(ErrorText(meta),
              "authentication failed: wrong proof of the auth token");
    EXPECT_FALSE(peer.Next(&type, &meta));
  }
  // Real workers: a wrong token and none are refused; the server goes on.
  auto wrong = Process(Work(port, dir_.File("wrong"))).Wait(30);
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(
      wrong.err.find("the server could not prove it knows the auth token"),
      std::string::npos)
      << wrong.err;
  auto none = Process(Work(port, "")).Wait(30);
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("authentication required"), std::string::npos)
      << none.err;

  auto good = Process(Work(port, dir_.File("token"))).Wait(60);
  EXPECT_EQ(good.exit_code, 0) << good.err;
  auto rs = serve.Wait(60);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_NE(rs.err.find("authentication failed"), std::string::npos) << rs.err;
}

TEST_F(AuthJobTest, WithTheTokenTrainingIsUnchanged) {
  Process serve(Serve(0, dir_.File("token"), "served.pt"));
  Process work(Work(serve.ListenPort(30), dir_.File("token")));
  ASSERT_EQ(work.Wait(60).exit_code, 0);
  ASSERT_EQ(serve.Wait(60).exit_code, 0);

  Process serve2(Serve(0, "", "plain.pt"));
  Process work2(Work(serve2.ListenPort(30), ""));
  ASSERT_EQ(work2.Wait(60).exit_code, 0);
  ASSERT_EQ(serve2.Wait(60).exit_code, 0);
  EXPECT_EQ(MaxAbsDiff(dir_.File("served.pt"), dir_.File("plain.pt")), 0.0);
}

// A peer not yet known is refused from a frame's header alone: a hello
// whose header announces 60 MiB of meta gets its error at once, before the
// server allocates or waits for any of it (with or without a token).
TEST_F(AuthJobTest, AHugeFirstFrameIsRefusedFromItsHeader) {
  for (const std::string& token : {std::string(), dir_.File("token")}) {
    Process serve(Serve(0, token, "m.pt"));
    RawPeer peer(serve.ListenPort(30));
    const uint32_t meta_len = 60u << 20;
    wire::FrameHeader h;
    h.type = token.empty() ? wire::MsgType::kHello : wire::MsgType::kAuthHello;
    h.body_len = wire::kMetaLenBytes + meta_len;
    std::string bytes(wire::kFrameHeaderBytes + wire::kMetaLenBytes, '\0');
    wire::EncodeFrameHeader(h, bytes.data());
    wire::EncodeFixed32(bytes.data() + wire::kFrameHeaderBytes, meta_len);
    peer.SendBytes(bytes);
    wire::MsgType type;
    std::string meta;
    ASSERT_TRUE(peer.Next(&type, &meta));
    EXPECT_EQ(type, wire::MsgType::kError);
    const std::string what = token.empty() ? "hello" : "auth_hello";
    EXPECT_EQ(
        ErrorText(meta).rfind(what + " of 62914564 bytes, expected at most", 0),
        0u)
        << ErrorText(meta);
    EXPECT_FALSE(peer.Next(&type, &meta));  // and the connection is closed
  }
}

}  // namespace
}  // namespace pstrain::testing
