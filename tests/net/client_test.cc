#include "net/client.h"

#include <chrono>
#include <fstream>
#include <thread>

#include <asio/steady_timer.hpp>
#include <gtest/gtest.h>

#include "net/listener.h"
#include "wire/messages.h"

namespace pstrain::net {
namespace {

using std::chrono::milliseconds;

// A server on a loopback port chosen by the kernel. It answers hello with
// hello, pull with a 1 MiB params frame, and never answers get_job.
class TestServer : public Connection::Handler {
 public:
  TestServer()
      : listener_(&io_, this, {}, [this](auto c) { conns_.push_back(c); }) {
    EXPECT_TRUE(listener_.Listen("127.0.0.1", 0).ok());
    data_.resize(1 << 20);
    for (size_t i = 0; i < data_.size(); ++i)
      data_[i] = static_cast<char>(i * 31);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~TestServer() override {
    asio::post(io_, [this] {
      listener_.Close();
      for (auto& c : conns_)
        c->Close();
    });
    thread_.join();
  }
  int port() const { return listener_.port(); }
  const std::string& data() const { return data_; }

  Status OnMeta(Connection&, const wire::FrameHeader&, std::string_view,
                uint64_t, std::vector<asio::mutable_buffer>*) override {
    return Status::Ok();
  }
  void OnFrame(Connection& c, const wire::FrameHeader& h,
               std::string_view) override {
    FrameBuffers& f = c.NewFrame();
    if (h.type == wire::MsgType::kHello) {
      wire::EncodeMeta(wire::Hello{wire::Role::kServer, 0, 3}, &meta_);
      f.Reset(wire::MsgType::kHello, h.request_id, meta_);
      c.Send(f);
    } else if (h.type == wire::MsgType::kPull) {
      wire::TensorDesc d;
      d.dtype = wire::DType::kUInt8;
      d.ndim = 1;
      d.dims[0] = static_cast<int64_t>(data_.size());
      d.nbytes = data_.size();
      wire::EncodeMeta(wire::Params{7, {d}, {}}, &meta_);
      f.Reset(wire::MsgType::kParams, h.request_id, meta_);
      f.AddData(data_.data(), data_.size());
      c.Send(f);
    } else if (h.type == wire::MsgType::kRegister) {
      c.SendErrorAndClose(h.request_id, Incompatible("model differs at key 0"));
    } else if (h.type == wire::MsgType::kDone) {
      Beat(c.shared_from_this(), h.request_id, 60);
    } else if (h.type == wire::MsgType::kServerInfo) {
      f.Reset(wire::MsgType::kAck, h.request_id, "");
      c.Send(f);
      c.SendErrorAndClose(0, Unavailable("its term 1 as server 1 is over"));
    }
  }
  // A held reply: a heartbeat every 25 ms, `left` of them, then the ack.
  void Beat(std::shared_ptr<Connection> c, uint64_t id, int left) {
    FrameBuffers& f = c->NewFrame();
    if (left == 0) {
      f.Reset(wire::MsgType::kAck, id, "");
      return c->Send(f);
    }
    wire::EncodeMeta(wire::Heartbeat{}, &beat_meta_);
    f.Reset(wire::MsgType::kHeartbeat, 0, beat_meta_);
    c->Send(f);
    timer_.expires_after(milliseconds(25));
    timer_.async_wait([this, c, id, left](const std::error_code& ec) {
      if (!ec)
        Beat(c, id, left - 1);
    });
  }
  void OnClose(Connection&, const Status&) override {}

 private:
  asio::io_context io_;
  Listener listener_;
  std::vector<std::shared_ptr<Connection>> conns_;
  std::string data_, meta_, beat_meta_;
  asio::steady_timer timer_{io_};
  std::thread thread_;
};

class BufferSink : public ReplySink {
 public:
  Status OnMeta(const wire::FrameHeader&, std::string_view, uint64_t bytes,
                std::vector<asio::mutable_buffer>* dst) override {
    buf.resize(bytes);
    dst->emplace_back(buf.data(), buf.size());
    return Status::Ok();
  }
  std::string buf;
};

// Sends `request` (whose meta Connection checks, as it checks every frame).
template <typename Request>
Status Send(Client& client, const Request& request, ReplySink* sink,
            milliseconds timeout, wire::MsgType* reply) {
  std::string meta;
  wire::EncodeMeta(request, &meta);
  FrameBuffers& f = client.NewRequest();
  f.Reset(wire::TypeOf(request), 0, meta);
  return client.Call(f, sink, timeout, reply);
}

// launch --master_port 0: a port below the kernel's ephemeral range, which
// no process binding port 0 or connecting is handed meanwhile, and free.
TEST(ClientTest, PickedPortsLieBelowTheEphemeralRangeAndAreFree) {
  int low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  for (int i = 0; i < 5; ++i) {
    auto port = PickFreePort("127.0.0.1");
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    EXPECT_GE(*port, 1024);
    EXPECT_LT(*port, low);
    asio::io_context io;
    Listener listener(&io, nullptr, {}, [](std::shared_ptr<Connection>) {});
    EXPECT_TRUE(listener.Listen("127.0.0.1", *port).ok()) << *port;
  }
}

TEST(ClientTest, HelloRoundTrip) {
  TestServer server;
  Client client;
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  std::string meta;
  wire::EncodeMeta(wire::Hello{wire::Role::kWorker, 1, 3}, &meta);
  FrameBuffers& f = client.NewRequest();
  f.Reset(wire::MsgType::kHello, 0, meta);
  wire::MsgType reply;
  ASSERT_TRUE(client.Call(f, nullptr, milliseconds(2000), &reply).ok());
  EXPECT_EQ(reply, wire::MsgType::kHello);
  wire::Hello hello;
  ASSERT_TRUE(wire::DecodeMeta(client.reply_meta(), &hello).ok());
  EXPECT_EQ(hello.role, wire::Role::kServer);
  EXPECT_EQ(hello.world_size, 3u);
}

TEST(ClientTest, DataLandsInTheSinkBuffer) {
  TestServer server;
  Client client;
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  BufferSink sink;
  wire::MsgType reply;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        Send(client, wire::Pull{}, &sink, milliseconds(2000), &reply).ok());
    EXPECT_EQ(reply, wire::MsgType::kParams);
    EXPECT_EQ(sink.buf, server.data());
  }
}

TEST(ClientTest, ErrorReplyBecomesItsStatus) {
  TestServer server;
  Client client;
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  wire::MsgType reply;
  Status s =
      Send(client, wire::Register{}, nullptr, milliseconds(2000), &reply);
  EXPECT_EQ(s.code(), StatusCode::kIncompatible);
  EXPECT_EQ(s.message(), "model differs at key 0");
}

TEST(ClientTest, SilentServerTimesOut) {
  TestServer server;
  Client client;
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  auto start = std::chrono::steady_clock::now();
  wire::MsgType reply;
  Status s = Send(client, wire::GetJob{}, nullptr, milliseconds(300), &reply);
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_GE(waited, milliseconds(300));
  EXPECT_LT(waited, milliseconds(3000));
}

// A host that answers no SYN (its link down) costs a connect its timeout,
// not the kernel's two minutes of retries. A listener whose accept queue
// is full and that never accepts drops each further SYN, as such a host
// does.
TEST(ClientTest, AConnectToAHostThatAnswersNoSynEndsAtItsTimeout) {
  asio::io_context io;
  asio::ip::tcp::acceptor full(io, {asio::ip::make_address("127.0.0.1"), 0});
  full.listen(0);
  const auto at = full.local_endpoint();
  // Fill the queue; each of these completes its handshake and waits.
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> queued;
  for (int i = 0; i < 4; ++i) {
    queued.push_back(std::make_unique<asio::ip::tcp::socket>(io));
    queued.back()->async_connect(at, [](const std::error_code&) {});
  }
  io.run_for(milliseconds(200));
  Client client;
  auto start = std::chrono::steady_clock::now();
  const Status s = client.Connect("127.0.0.1", at.port(), milliseconds(500));
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.ToString();
  EXPECT_GE(waited, milliseconds(500));
  EXPECT_LT(waited, milliseconds(30000));
}

// --dead_after: a server that says nothing at all for that long while a
// reply is awaited is given up on, long before the call's timeout, and
// named; the connection is closed.
TEST(ClientTest, ASilentServerIsGivenUpOnAfterDeadAfter) {
  TestServer server;
  Client client(ConnectionOptions{wire::kDefaultMaxFrameBytes, 0.2});
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  auto start = std::chrono::steady_clock::now();
  wire::MsgType reply;
  Status s = Send(client, wire::GetJob{}, nullptr, milliseconds(60000), &reply);
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "no word from 127.0.0.1:" + std::to_string(server.port()) +
                " for 0.2 s (--dead_after)");
  EXPECT_GE(waited, milliseconds(200));
  EXPECT_LT(waited, milliseconds(30000));
  EXPECT_FALSE(client.connected());
}

// A server that holds the reply for longer than --dead_after, sending
// heartbeats meanwhile, is waited for; the heartbeats are no reply.
TEST(ClientTest, HeartbeatsKeepAHeldReplyAwaited) {
  TestServer server;
  Client client(ConnectionOptions{wire::kDefaultMaxFrameBytes, 0.5});
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  auto start = std::chrono::steady_clock::now();
  wire::MsgType reply;
  Status s = Send(client, wire::Done{}, nullptr, milliseconds(60000), &reply);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(reply, wire::MsgType::kAck);
  // 60 beats 25 ms apart: longer than --dead_after on any machine.
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(1500));
  BufferSink sink;  // the next reply is read as ever
  ASSERT_TRUE(
      Send(client, wire::Pull{}, &sink, milliseconds(60000), &reply).ok());
  EXPECT_EQ(reply, wire::MsgType::kParams);
  EXPECT_EQ(sink.buf, server.data());
}

// Between calls, Poll reads what the peer said: its error for the whole
// connection (request id 0), as a fenced server hears from rank 0.
TEST(ClientTest, PollReturnsThePeersWordForTheConnection) {
  TestServer server;
  Client client;
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  EXPECT_TRUE(client.Poll().ok());
  wire::MsgType reply;
  ASSERT_TRUE(
      Send(client, wire::ServerInfo{"h:1"}, nullptr, milliseconds(2000), &reply)
          .ok());
  Status s = client.Poll();
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (s.ok() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(5));
    s = client.Poll();
  }
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "its term 1 as server 1 is over");
  EXPECT_TRUE(client.error_from_peer());
}

TEST(ClientTest, NoServerTimesOutNamingTheAddress) {
  int port;
  {
    TestServer server;
    port = server.port();
  }
  Client client;
  Status s = client.Connect("127.0.0.1", port, milliseconds(300));
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_NE(s.message().find("127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << s.message();
}

TEST(ListenerTest, PortInUseIsUnavailable) {
  TestServer server;
  asio::io_context io;
  TestServer* handler = &server;
  Listener second(&io, handler, {}, [](auto) {});
  Status s = second.Listen("127.0.0.1", server.port());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("in use"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace pstrain::net
