// Gated frames on real loopback TCP: each buffer leaves only once the gate
// has opened its mark, the frame arrives whole and unchanged, and an
// aborted gate fails the call instead of sending what was never produced.

#include "net/send_gate.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "net/client.h"
#include "net/listener.h"
#include "wire/messages.h"

namespace pstrain::net {
namespace {

using std::chrono::milliseconds;
constexpr size_t kPiece = 256 * 1024;
constexpr int kPieces = 3;

// A count that threads wait on.
class Counter {
 public:
  void Add() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++value_;
    }
    cv_.notify_all();
  }
  int load() const {
    std::lock_guard<std::mutex> lock(mu_);
    return value_;
  }
  void store(int v) {
    std::lock_guard<std::mutex> lock(mu_);
    value_ = v;
  }
  /// Until the count is at least `want`; false after 10 s.
  bool WaitFor(int want) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10),
                        [&] { return value_ >= want; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  int value_ = 0;
};

// Reads a push piece by piece, counting the pieces that are in and noting
// how far the client's gate (`watched`) was open when each came; acks the
// whole frame.
class PieceServer : public Connection::Handler {
 public:
  PieceServer()
      : listener_(&io_, this, {}, [this](auto c) { conns_.push_back(c); }) {
    EXPECT_TRUE(listener_.Listen("127.0.0.1", 0).ok());
    data_.resize(kPieces * kPiece);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~PieceServer() override {
    asio::post(io_, [this] {
      listener_.Close();
      for (auto& c : conns_)
        c->Close();
    });
    thread_.join();
  }
  int port() const { return listener_.port(); }
  std::string data() const { return data_; }  // once frames_ says so
  Counter pieces, frames, closes;
  const SendGate* watched = nullptr;
  // The gate's open mark when piece i arrived.
  std::atomic<uint32_t> open_at_piece[kPieces] = {};
  std::atomic<int> last_piece{-1};

  Status OnMeta(Connection& c, const wire::FrameHeader& h, std::string_view,
                uint64_t bytes,
                std::vector<asio::mutable_buffer>* dst) override {
    const bool tagged = (h.flags & wire::kFrameTagged) != 0;
    if (bytes != data_.size() + (tagged ? kPieces * wire::kTagBytes : 0))
      return Corruption("unexpected size");
    for (int i = 0; i < kPieces; ++i)
      dst->emplace_back(&data_[i * kPiece], kPiece);
    c.ReadPieceByPiece();
    if (tagged)
      c.ReadTagged({0, 1, 2});
    return Status::Ok();
  }
  void OnPiece(Connection&, size_t index) override {
    if (watched != nullptr && index < kPieces)
      open_at_piece[index] = watched->open();
    last_piece = static_cast<int>(index);
    pieces.Add();
  }
  void OnFrame(Connection& c, const wire::FrameHeader& h,
               std::string_view) override {
    frames.Add();
    FrameBuffers& f = c.NewFrame();
    f.Reset(wire::MsgType::kAck, h.request_id, {});
    c.Send(f);
  }
  void OnClose(Connection&, const Status&) override { closes.Add(); }

 private:
  asio::io_context io_;
  Listener listener_;
  std::vector<std::shared_ptr<Connection>> conns_;
  std::string data_;
  std::thread thread_;
};

struct GatedCall {
  std::string data = std::string(kPieces * kPiece, '\0');
  Client client;
  SendGate gate{kPieces};

  std::string meta;  // a push of kPieces uint8 tensors of kPiece bytes

  explicit GatedCall(int port) {
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<char>(i * 7 + i / 4096);
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
  // Sends the three pieces gated on marks 1, 2, 3, on a thread of its own;
  // `tagged`: each after its tag, in the order their marks open.
  // `open_to`: the gate's marks open before the frame is queued.
  std::future<Status> Start(bool tagged = false,
                            WriteObserver* observer = nullptr,
                            uint32_t open_to = 0) {
    gate.Reset();
    if (open_to > 0)
      gate.OpenTo(open_to);
    return std::async(std::launch::async, [this, tagged, observer] {
      FrameBuffers& f = client.NewRequest();
      f.Reset(wire::MsgType::kPush, 0, meta);
      f.SetGate(&gate);
      f.SetWriteObserver(observer);
      for (int i = 0; i < kPieces; ++i) {
        if (tagged)
          f.AddTag(static_cast<uint32_t>(i));
        f.AddData(&data[i * kPiece], kPiece, i + 1);
      }
      wire::MsgType reply;
      Status s = client.Call(f, nullptr, milliseconds(10000), &reply);
      if (s.ok() && reply != wire::MsgType::kAck)
        return Corruption("not an ack");
      return s;
    });
  }
};

// Each mark is opened only once the piece before it has arrived, so a piece
// that left early arrives while the gate is open to less than its mark.
TEST(SendGateTest, EachPieceLeavesOnlyOnceItsMarkIsOpen) {
  PieceServer server;
  GatedCall call(server.port());
  server.watched = &call.gate;
  for (int round = 0; round < 2; ++round) {  // the gate and frame are reused
    server.pieces.store(0);
    auto done = call.Start();
    for (int i = 1; i <= kPieces; ++i) {
      call.gate.OpenTo(i);
      ASSERT_TRUE(server.pieces.WaitFor(i)) << "piece " << i << " never came";
    }
    ASSERT_EQ(done.wait_for(std::chrono::seconds(10)),
              std::future_status::ready);
    EXPECT_TRUE(done.get().ok());
    EXPECT_EQ(server.pieces.load(), kPieces);
    for (int i = 0; i < kPieces; ++i) {
      EXPECT_GE(server.open_at_piece[i].load(), static_cast<uint32_t>(i + 1))
          << "round " << round << ": piece " << i << " left before its mark";
    }
    EXPECT_EQ(server.frames.load(), round + 1);
    EXPECT_EQ(server.data(), call.data);
  }
}

// A tagged push: a mark opened alone sends its piece at once, ahead of the
// pieces before it, which wait for their own marks.
TEST(SendGateTest, ATaggedPushSendsEachPieceOnceItsOwnMarkOpens) {
  PieceServer server;
  GatedCall call(server.port());
  server.watched = &call.gate;
  for (int round = 0; round < 2; ++round) {
    server.pieces.store(0);
    auto done = call.Start(true);
    const int order[kPieces] = {2, 0, 1};
    for (int n = 0; n < kPieces; ++n) {
      call.gate.Open(static_cast<uint32_t>(order[n] + 1));
      ASSERT_TRUE(server.pieces.WaitFor(n + 1)) << "piece " << order[n];
      EXPECT_EQ(server.last_piece.load(), order[n]) << "round " << round;
      EXPECT_EQ(server.open_at_piece[order[n]].load(), 0u)
          << "the prefix stayed closed";
    }
    ASSERT_EQ(done.wait_for(std::chrono::seconds(10)),
              std::future_status::ready);
    EXPECT_TRUE(done.get().ok());
    EXPECT_EQ(server.frames.load(), round + 1);
    EXPECT_EQ(server.data(), call.data);
  }
}

// With a send window, each group of a tagged push is chosen only once the
// kernel says its unsent bytes are below it, a wait the observer hears of.
TEST(SendGateTest, WithASendWindowEachGroupWaitsForTheKernelFirst) {
  struct Windows : WriteObserver {
    void OnWritten(const FrameBuffers&, size_t, size_t) override {}
    void OnWindow(const FrameBuffers&, bool waiting) override {
      ++(waiting ? waits : ends);
    }
    std::atomic<int> waits{0}, ends{0};
  } windows;
  PieceServer server;
  GatedCall call(server.port());
  call.client.SetSendWindow(64 * 1024);
  // Open before the frame is queued: a group the gate holds when its window
  // wait ends waits for the gate, then for the window again, so opening it
  // while the prefix is written would count one wait more on a slow test
  // thread.
  auto done = call.Start(true, &windows, SendGate::kAll);
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(done.get().ok());
  EXPECT_EQ(server.data(), call.data);
  EXPECT_EQ(windows.waits.load(), kPieces);
  EXPECT_EQ(windows.ends.load(), kPieces);
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
  ASSERT_TRUE(server.pieces.WaitFor(1));
  call.gate.Abort();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Status s = done.get();
  EXPECT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
  EXPECT_NE(s.message().find("never produced"), std::string::npos)
      << s.message();
  EXPECT_FALSE(call.client.connected());
  ASSERT_TRUE(server.closes.WaitFor(1));
  EXPECT_EQ(server.frames.load(), 0);
}

}  // namespace
}  // namespace pstrain::net
