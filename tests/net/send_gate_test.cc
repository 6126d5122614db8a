// Gated frames on real loopback TCP: each buffer leaves only once the gate
// has opened its mark, the frame arrives whole and unchanged, and an
// aborted gate fails the call instead of sending what was never produced.

#include "net/send_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "net/client.h"
#include "net/listener.h"
#include "wire/messages.h"

namespace pstrain::net {
namespace {

using std::chrono::milliseconds;
constexpr size_t kPiece = 256 * 1024;
constexpr int kPieces = 3;

// Reads a push piece by piece, counting the pieces that are in; acks the
// whole frame.
class PieceServer : public Connection::Handler {
 public:
  PieceServer() : listener_(&io_, this, {}, [this](auto c) { conns_.push_back(c); }) {
    EXPECT_TRUE(listener_.Listen("127.0.0.1", 0).ok());
    data_.resize(kPieces * kPiece);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~PieceServer() override {
    asio::post(io_, [this] {
      listener_.Close();
      for (auto& c : conns_) c->Close();
    });
    thread_.join();
  }
  int port() const { return listener_.port(); }
  std::string data() const { return data_; }  // once frames_ says so
  std::atomic<int> pieces{0}, frames{0}, closes{0};

  Status OnMeta(Connection& c, const wire::FrameHeader&, std::string_view, uint64_t bytes,
                std::vector<asio::mutable_buffer>* dst) override {
    if (bytes != data_.size()) return Corruption("unexpected size");
    for (int i = 0; i < kPieces; ++i) dst->emplace_back(&data_[i * kPiece], kPiece);
    c.ReadPieceByPiece();
    return Status::Ok();
  }
  void OnPiece(Connection&, size_t) override { ++pieces; }
  void OnFrame(Connection& c, const wire::FrameHeader& h, std::string_view) override {
    ++frames;
    FrameBuffers& f = c.NewFrame();
    f.Reset(wire::MsgType::kAck, h.request_id, {});
    c.Send(f);
  }
  void OnClose(Connection&, const Status&) override { ++closes; }

 private:
  asio::io_context io_;
  Listener listener_;
  std::vector<std::shared_ptr<Connection>> conns_;
  std::string data_;
  std::thread thread_;
};

bool WaitFor(const std::atomic<int>& value, int want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (value.load() < want) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

struct GatedCall {
  std::string data = std::string(kPieces * kPiece, '\0');
  Client client;
  SendGate gate;

  std::string meta;  // a push of kPieces uint8 tensors of kPiece bytes

  explicit GatedCall(int port) {
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 4096);
    wire::Push push;
    for (int i = 0; i < kPieces; ++i) {
      wire::TensorDesc d;
      d.key = static_cast<uint32_t>(i);
      d.dtype = wire::DType::kUInt8;
      d.ndim = 1;
      d.dims[0] = kPiece;
      d.nbytes = kPiece;
      push.grads.push_back(d);
    }
    wire::EncodeMeta(push, &meta);
    EXPECT_TRUE(client.Connect("127.0.0.1", port, milliseconds(2000)).ok());
    client.WatchGate(&gate);
  }
  // Sends the three pieces gated on marks 1, 2, 3, on a thread of its own.
  std::future<Status> Start() {
    gate.Reset();
    return std::async(std::launch::async, [this] {
      FrameBuffers& f = client.NewRequest();
      f.Reset(wire::MsgType::kPush, 0, meta);
      f.SetGate(&gate);
      for (int i = 0; i < kPieces; ++i) f.AddData(&data[i * kPiece], kPiece, i + 1);
      wire::MsgType reply;
      Status s = client.Call(f, nullptr, milliseconds(10000), &reply);
      if (s.ok() && reply != wire::MsgType::kAck) return Corruption("not an ack");
      return s;
    });
  }
};

TEST(SendGateTest, EachPieceLeavesOnlyOnceItsMarkIsOpen) {
  PieceServer server;
  GatedCall call(server.port());
  for (int round = 0; round < 2; ++round) {  // the gate and frame are reused
    server.pieces = 0;
    auto done = call.Start();
    for (int i = 1; i <= kPieces; ++i) {
      // Held back: piece i must not arrive while its mark is closed.
      std::this_thread::sleep_for(milliseconds(50));
      EXPECT_EQ(server.pieces.load(), i - 1) << "round " << round;
      call.gate.OpenTo(i);
      ASSERT_TRUE(WaitFor(server.pieces, i)) << "piece " << i << " never came";
    }
    ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_TRUE(done.get().ok());
    EXPECT_EQ(server.frames.load(), round + 1);
    EXPECT_EQ(server.data(), call.data);
  }
}

TEST(SendGateTest, OpeningAllAtOnceSendsTheWholeFrame) {
  PieceServer server;
  GatedCall call(server.port());
  auto done = call.Start();
  call.gate.OpenTo(SendGate::kAll);
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(done.get().ok());
  EXPECT_EQ(server.data(), call.data);
}

TEST(SendGateTest, AbortFailsTheCallAndClosesWithoutAFrame) {
  PieceServer server;
  GatedCall call(server.port());
  auto done = call.Start();
  call.gate.OpenTo(1);
  ASSERT_TRUE(WaitFor(server.pieces, 1));
  call.gate.Abort();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Status s = done.get();
  EXPECT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
  EXPECT_NE(s.message().find("never produced"), std::string::npos) << s.message();
  EXPECT_FALSE(call.client.connected());
  ASSERT_TRUE(WaitFor(server.closes, 1));
  EXPECT_EQ(server.frames.load(), 0);
}

}  // namespace
}  // namespace pstrain::net
