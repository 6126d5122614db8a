// The shared-memory transport: the ring's arithmetic and its defence
// against a peer that scribbles over it (no sockets), and the handover
// and frames end to end between a real Client and a server on loopback,
// moved onto shared memory.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <asio/connect.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

#include "net/client.h"
#include "net/lifeline.h"
#include "net/listener.h"
#include "net/shm_handover.h"
#include "net/shm_ring.h"
#include "net/shm_segment.h"
#include "net/transport.h"
#include "wire/messages.h"

namespace pstrain::net {
namespace {

using std::chrono::milliseconds;

// A ring over plain memory, as both ends see it.
struct RingMemory {
  explicit RingMemory(uint64_t capacity) : data(capacity) {}
  ShmRing End() { return ShmRing(&control, data.data(), data.size()); }
  ShmRingControl control{};
  std::vector<uint8_t> data;
};

TEST(ShmRingTest, BytesComeOutInOrderAcrossTheWrap) {
  RingMemory mem(ShmRing::kMinBytes);
  ShmRing producer = mem.End(), consumer = mem.End();
  std::string in, out;
  bool wake = false;
  for (int round = 0; round < 7; ++round) {
    std::string chunk(3000, '\0');
    for (size_t i = 0; i < chunk.size(); ++i)
      chunk[i] = static_cast<char>(round * 7 + i * 13);
    in += chunk;
    ASSERT_EQ(*producer.Write(chunk.data(), chunk.size(), &wake), 3000u);
    std::string got(3000, '\0');
    ASSERT_EQ(*consumer.Read(got.data(), got.size(), &wake), 3000u);
    out += got;
  }
  EXPECT_EQ(in, out);
}

TEST(ShmRingTest, PeekShowsBytesWhereTheyLieUnlessTheyWrap) {
  RingMemory mem(ShmRing::kMinBytes);
  ShmRing producer = mem.End(), consumer = mem.End();
  bool wake = false;
  std::string bytes(3000, 'a');
  ASSERT_EQ(*producer.Write(bytes.data(), bytes.size(), &wake), 3000u);
  EXPECT_EQ(*consumer.Peek(3001), nullptr);  // not all in
  const uint8_t* at = *consumer.Peek(3000);
  EXPECT_EQ(at, mem.data.data());
  // A producer waiting for room is woken by the skip, as by a read.
  producer.ProducerWaits();
  consumer.Skip(3000, &wake);
  EXPECT_TRUE(wake);
  EXPECT_EQ(*producer.Writable(), ShmRing::kMinBytes);
  // The next 2000 bytes run from 3000 round to 904: they wrap.
  std::string more(2000, 'b');
  ASSERT_EQ(*producer.Write(more.data(), more.size(), &wake), 2000u);
  EXPECT_EQ(*consumer.Peek(2000), nullptr);
  EXPECT_EQ(*consumer.Peek(1096), mem.data.data() + 3000);
  std::string out(2000, '\0');
  ASSERT_EQ(*consumer.Read(out.data(), out.size(), &wake), 2000u);
  EXPECT_EQ(out, more);
}

TEST(ShmRingTest, AFullRingTakesOnlyWhatFits) {
  RingMemory mem(ShmRing::kMinBytes);
  ShmRing producer = mem.End(), consumer = mem.End();
  std::string big(10000, 'x');
  bool wake = false;
  EXPECT_EQ(*producer.Write(big.data(), big.size(), &wake), 4096u);
  EXPECT_EQ(*producer.Write(big.data(), big.size(), &wake), 0u);
  EXPECT_EQ(*producer.Writable(), 0u);
  char buf[100];
  EXPECT_EQ(*consumer.Read(buf, sizeof(buf), &wake), 100u);
  EXPECT_EQ(*producer.Writable(), 100u);
}

TEST(ShmRingTest, TheSleeperIsWokenOnceItsFlagIsUp) {
  RingMemory mem(ShmRing::kMinBytes);
  ShmRing producer = mem.End(), consumer = mem.End();
  bool wake = true;
  EXPECT_EQ(*producer.Write("a", 1, &wake), 1u);
  EXPECT_FALSE(wake);  // nobody sleeps
  char c;
  ASSERT_EQ(*consumer.Read(&c, 1, &wake), 1u);
  consumer.ConsumerWaits();
  EXPECT_EQ(*producer.Write("b", 1, &wake), 1u);
  EXPECT_TRUE(wake);
  EXPECT_EQ(*producer.Write("c", 1, &wake), 1u);
  EXPECT_FALSE(wake);  // the flag was taken down by the first wake
  producer.ProducerWaits();
  char two[2];
  EXPECT_EQ(*consumer.Read(two, 2, &wake), 2u);
  EXPECT_TRUE(wake);
}

TEST(ShmRingTest, APeerClaimingMoreThanTheRingHoldsIsCorruption) {
  RingMemory mem(ShmRing::kMinBytes);
  ShmRing consumer = mem.End();
  mem.control.head.store(ShmRing::kMinBytes + 1);  // the peer's scribble
  char buf[16];
  bool wake = false;
  Result<size_t> n = consumer.Read(buf, sizeof(buf), &wake);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kCorruption);
  EXPECT_NE(n.status().message().find("claims 4097 bytes"), std::string::npos)
      << n.status().ToString();
}

TEST(ShmRingTest, APeerReadingPastWhatWasWrittenIsCorruption) {
  RingMemory mem(ShmRing::kMinBytes);
  ShmRing producer = mem.End();
  bool wake = false;
  ASSERT_EQ(*producer.Write("abc", 3, &wake), 3u);
  mem.control.tail.store(10);  // read 10 of 3 written
  Result<size_t> n = producer.Write("d", 1, &wake);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kCorruption);
}

TEST(ShmRingTest, OurPositionIsOursWhateverThePeerWritesOverIt) {
  RingMemory mem(ShmRing::kMinBytes);
  ShmRing producer = mem.End(), consumer = mem.End();
  bool wake = false;
  ASSERT_EQ(*producer.Write("abcdef", 6, &wake), 6u);
  char buf[3];
  ASSERT_EQ(*consumer.Read(buf, 3, &wake), 3u);
  mem.control.tail.store(0);  // the peer rewinds our published position
  ASSERT_EQ(*consumer.Read(buf, 3, &wake), 3u);
  EXPECT_EQ(std::string(buf, 3), "def");
}

// Lines of /proc/self/maps that map a shared-memory segment.
int MappedSegments() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find("memfd:pstrain-shm") != std::string::npos;
  return n;
}

// A server on a loopback port with a handover socket. It answers
// shm_offer with a ticket, and echoes any push as a params frame of the
// same bytes (the data section read into, and sent from, its own buffer).
class ShmServer : public Connection::Handler {
 public:
  ShmServer()
      : listener_(&io_, this, {}, [this](auto c) { conns_.push_back(c); }),
        shm_(&io_) {
    EXPECT_TRUE(listener_.Listen("127.0.0.1", 0).ok());
    EXPECT_TRUE(shm_.Listen().ok());
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ShmServer() override { Stop(); }
  void Stop() {
    if (!thread_.joinable())
      return;
    asio::post(io_, [this] {
      listener_.Close();
      shm_.Close();
      for (auto& c : conns_)
        c->Close();
      conns_.clear();
    });
    thread_.join();
  }
  int port() const { return listener_.port(); }
  // Read on the server's thread only after Stop or once calls are done.
  int frame_errors = 0;
  int frames = 0;
  std::vector<std::string> closes;
  // Set before calls: pushes are read in pieces of this many bytes (0:
  // whole), offered in place, and taken there when take_in_place.
  size_t piece_bytes = 0;
  bool take_in_place = true;
  // How many pieces were taken in place, and how many were copied.
  int in_place = 0, copied = 0;
  // Set before calls: the piece taken in place with this index closes its
  // connection (-1: none); on_close runs as a connection closes.
  int close_at_piece = -1;
  std::function<void()> on_close;

  Status OnMeta(Connection& c, const wire::FrameHeader&, std::string_view,
                uint64_t bytes,
                std::vector<asio::mutable_buffer>* dst) override {
    echo_.resize(bytes);
    if (bytes == 0)
      return Status::Ok();
    if (piece_bytes == 0) {
      dst->emplace_back(echo_.data(), echo_.size());
      return Status::Ok();
    }
    for (size_t at = 0; at < bytes; at += piece_bytes)
      dst->emplace_back(echo_.data() + at, std::min(piece_bytes, bytes - at));
    c.ReadPieceByPiece();
    c.ReadInPlace();
    return Status::Ok();
  }
  bool OnPieceAt(Connection& c, size_t index, const uint8_t* data) override {
    if (!take_in_place)
      return false;
    const size_t at = index * piece_bytes;
    std::memcpy(echo_.data() + at, data,
                std::min(piece_bytes, echo_.size() - at));
    ++in_place;
    if (static_cast<int>(index) == close_at_piece)
      c.Close();
    return true;
  }
  void OnPiece(Connection&, size_t) override { ++copied; }
  void OnFrame(Connection& c, const wire::FrameHeader& h,
               std::string_view meta) override {
    ++frames;
    FrameBuffers& f = c.NewFrame();
    if (h.type == wire::MsgType::kShmOffer) {
      wire::ShmTicket t{shm_.socket_name(), "", ""};
      for (auto& conn : conns_) {
        if (conn.get() == &c)
          t.cookie = shm_.IssueTicket(conn);
      }
      wire::EncodeMeta(t, &meta_);
      f.Reset(wire::MsgType::kShmTicket, h.request_id, meta_);
      return c.Send(f);
    }
    wire::Push push;
    ASSERT_TRUE(wire::DecodeMeta(meta, &push).ok());
    wire::Params params;
    params.version = push.version;
    params.params = push.grads;
    wire::EncodeMeta(params, &meta_);
    f.Reset(wire::MsgType::kParams, h.request_id, meta_);
    f.AddData(echo_.data(), echo_.size());
    c.Send(f);
  }
  void OnClose(Connection& c, const Status& why) override {
    closes.push_back(why.ToString());
    if (on_close)
      on_close();
    // As the Service does: the connection (and its mapping) goes once its
    // own callbacks are done.
    asio::post(io_, [this, p = &c] {
      for (auto it = conns_.begin(); it != conns_.end(); ++it) {
        if (it->get() == p) {
          conns_.erase(it);
          break;
        }
      }
    });
  }

  ShmAcceptor& acceptor() { return shm_; }
  asio::io_context& io() { return io_; }

 private:
  asio::io_context io_;
  Listener listener_;
  ShmAcceptor shm_;
  std::vector<std::shared_ptr<Connection>> conns_;
  std::string echo_, meta_;
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

// A push of `data` (one uint8 tensor, which must outlive the request).
FrameBuffers& PushOf(Client& client, const std::string& data) {
  wire::TensorDesc d;
  d.dtype = wire::DType::kUInt8;
  d.ndim = 1;
  d.dims[0] = static_cast<int64_t>(data.size());
  d.nbytes = data.size();
  std::string meta;
  wire::Push push;
  push.version = 3;
  push.grads = {d};
  wire::EncodeMeta(push, &meta);
  FrameBuffers& f = client.NewRequest();
  f.Reset(wire::MsgType::kPush, 0, meta);
  f.AddData(data.data(), data.size());
  return f;
}

// A push of `data`, answered by the echo.
Status Echo(Client& client, const std::string& data, std::string* back) {
  FrameBuffers& f = PushOf(client, data);
  BufferSink sink;
  wire::MsgType reply;
  PS_RETURN_IF_ERROR(client.Call(f, &sink, milliseconds(5000), &reply));
  *back = std::move(sink.buf);
  return Status::Ok();
}

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>(i * 131 + seed);
  return s;
}

TEST(ShmTransportTest, FramesOfEverySizeGoThroughTheRings) {
  ShmServer server;
  Client client;
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  Status s = OfferShm(&client, milliseconds(5000), 64 << 10);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(client.on_shm());
  // Sizes below, at and far above the 64 KiB rings: the large ones go
  // through while both ends copy at once.
  for (size_t n : {size_t{1}, size_t{4096}, size_t{65536}, size_t{3 << 20}}) {
    const std::string data = Pattern(n, static_cast<int>(n));
    std::string back;
    Status e = Echo(client, data, &back);
    ASSERT_TRUE(e.ok()) << n << ": " << e.ToString();
    EXPECT_EQ(back, data) << n;
  }
  EXPECT_EQ(server.acceptor().attached(), 1u);
}

// Start writes the request and returns; it must not stay to run a read
// that looks again from the queue (always ready): with a spin of an hour
// it would return only once the server is gone. The watchdog stops the
// server after 10 s in that case, and the test fails on its flag rather
// than hanging.
TEST(ShmTransportTest, StartReturnsOnceTheRequestIsWrittenWhateverTheSpin) {
  ShmServer server;
  Client client;
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  ShmStreamOptions spin_long;
  spin_long.spin = std::chrono::hours(1);
  ASSERT_TRUE(OfferShm(&client, milliseconds(5000), 64 << 10, spin_long).ok());
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, stopped_server = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return started; })) {
      stopped_server = true;
      lock.unlock();
      server.Stop();
    }
  });
  const std::string data = Pattern(4096, 7);
  FrameBuffers& f = PushOf(client, data);
  BufferSink sink;
  Status s = client.Start(f, &sink);
  {
    std::lock_guard<std::mutex> lock(mu);
    started = true;
  }
  cv.notify_one();
  watchdog.join();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(stopped_server);
  wire::MsgType reply;
  ASSERT_TRUE(client.Await(milliseconds(5000), &reply).ok());
  EXPECT_EQ(sink.buf, data);
  client.Close();
}

// A push read piece by piece in place: each piece whole in the ring is
// offered where it lies, one that wraps round the ring's end is copied, and
// the bytes are the same either way.
TEST(ShmTransportTest, PiecesAreOfferedInPlaceAndThoseThatWrapAreCopied) {
  for (bool take : {true, false}) {
    ShmServer server;
    server.piece_bytes = 16 << 10;
    server.take_in_place = take;
    Client client;
    ASSERT_TRUE(
        client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
    ASSERT_TRUE(OfferShm(&client, milliseconds(5000), 64 << 10).ok());
    // 3 MiB through a 64 KiB ring: the frame's header and meta put the
    // pieces off the ring's 16 KiB boundaries, so some wrap.
    const std::string data = Pattern(3 << 20, 5);
    std::string back;
    Status e = Echo(client, data, &back);
    ASSERT_TRUE(e.ok()) << e.ToString();
    EXPECT_EQ(back, data);
    client.Close();
    server.Stop();
    const int pieces = (3 << 20) / (16 << 10);
    EXPECT_EQ(server.in_place + server.copied, pieces) << take;
    if (take) {
      EXPECT_GT(server.in_place, pieces / 2);
      EXPECT_GT(server.copied, 0);  // the wrapped ones
    } else {
      EXPECT_EQ(server.in_place, 0);
    }
  }
}

// Over TCP, ReadInPlace changes nothing: every piece is copied.
TEST(ShmTransportTest, InPlaceReadsAreShmOnly) {
  ShmServer server;
  server.piece_bytes = 16 << 10;
  Client client;
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  const std::string data = Pattern(256 << 10, 9);
  std::string back;
  ASSERT_TRUE(Echo(client, data, &back).ok());
  EXPECT_EQ(back, data);
  client.Close();
  server.Stop();
  EXPECT_EQ(server.in_place, 0);
  EXPECT_EQ(server.copied, 16);
}

TEST(ShmTransportTest, ACookieTheServerDidNotGiveIsRefused) {
  ShmServer server;
  asio::io_context io;
  const int before = MappedSegments();
  auto stream = ConnectShm(io, server.acceptor().socket_name(),
                           std::string(32, 'a'), milliseconds(5000));
  ASSERT_FALSE(stream.ok());
  EXPECT_NE(stream.status().message().find("refused"), std::string::npos)
      << stream.status().ToString();
  server.Stop();
  EXPECT_EQ(server.acceptor().refused(), 1u);
  EXPECT_NE(server.acceptor().last_refusal().find("did not give"),
            std::string::npos);
  EXPECT_EQ(MappedSegments(), before);  // nothing attached, nothing left
}

// A handler that closes its connection as it takes a piece in place ends
// the frame's reads there. The worker writes the first of two pieces and
// no more: a read of the second would wait for it on a closed stream,
// holding the connection and the server's io_context. If stopping the
// server has not returned in 10 s, the watchdog stops that io_context and
// the test fails on its flag rather than hanging.
TEST(ShmTransportTest, AHandlerThatClosesAtAPieceReadsNoFurther) {
  ShmServer server;
  server.piece_bytes = 16 << 10;
  server.close_at_piece = 0;
  std::promise<void> closed;
  server.on_close = [&] { closed.set_value(); };
  Client client;
  ASSERT_TRUE(
      client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  ASSERT_TRUE(OfferShm(&client, milliseconds(5000), 64 << 10).ok());
  const std::string data = Pattern(32 << 10, 9);
  std::string frame;
  for (const asio::const_buffer& b : PushOf(client, data).Finish())
    frame.append(static_cast<const char*>(b.data()), b.size());
  frame.resize(frame.size() - (16 << 10));  // the second piece never comes
  ASSERT_TRUE(client.WriteNow(frame).ok());
  closed.get_future().wait();
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false, stopped_io = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return stopped; })) {
      stopped_io = true;
      server.io().stop();
    }
  });
  server.Stop();
  {
    std::lock_guard<std::mutex> lock(mu);
    stopped = true;
  }
  cv.notify_one();
  watchdog.join();
  EXPECT_FALSE(stopped_io) << "a read went on after the handler's close";
  EXPECT_EQ(server.in_place, 1);
  EXPECT_EQ(server.closes, std::vector<std::string>{"ok"});
}

TEST(ShmTransportTest, GarbageInTheRingIsAFrameErrorAndTheServerGoesOn) {
  ShmServer server;
  {
    Client client;
    ASSERT_TRUE(
        client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
    ASSERT_TRUE(OfferShm(&client, milliseconds(5000)).ok());
    // The worker's end writes what no frame begins with.
    ASSERT_TRUE(client.WriteNow(std::string(64, '\xab')).ok());
    FrameBuffers& f = client.NewRequest();
    f.Reset(wire::MsgType::kHeartbeat, 0, "");
    wire::MsgType reply;
    Status s = client.Call(f, nullptr, milliseconds(5000), &reply);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(client.error_from_peer()) << s.ToString();
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  }
  // Another worker is served as before.
  Client next;
  ASSERT_TRUE(
      next.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
  ASSERT_TRUE(OfferShm(&next, milliseconds(5000)).ok());
  std::string back;
  ASSERT_TRUE(Echo(next, "still here", &back).ok());
  EXPECT_EQ(back, "still here");
}

TEST(ShmTransportTest, AWorkerThatGoesAwayLeavesNoSegmentMapped) {
  const int before = MappedSegments();
  ShmServer server;
  {
    Client client;
    ASSERT_TRUE(
        client.Connect("127.0.0.1", server.port(), milliseconds(2000)).ok());
    ASSERT_TRUE(OfferShm(&client, milliseconds(5000)).ok());
    EXPECT_EQ(MappedSegments(), before + 2);  // both ends, in this process
    std::string back;
    ASSERT_TRUE(Echo(client, "x", &back).ok());
  }  // the worker closes: the server learns it through the lifeline
  for (int i = 0; i < 200 && MappedSegments() != before; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(MappedSegments(), before);
  server.Stop();
  ASSERT_EQ(server.closes.size(), 1u);
}

// A connected pair of loopback sockets on `io`.
struct SocketPair {
  explicit SocketPair(asio::io_context& io) : ours(io), peer(io) {
    asio::ip::tcp::acceptor acceptor(
        io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    peer.connect(acceptor.local_endpoint());
    acceptor.accept(ours);
  }
  asio::ip::tcp::socket ours, peer;
};

TEST(LifelineTest, ThePeerClosingOrWritingEndsIt) {
  asio::io_context io;
  std::vector<LifelineEnd> ends;
  auto record = [&](LifelineEnd e) { ends.push_back(e); };
  SocketPair closed(io), written(io), quiet(io);
  WatchLifeline(&closed.ours, record);
  WatchLifeline(&written.ours, record);
  WatchLifeline(&quiet.ours, record);
  io.poll();
  EXPECT_TRUE(ends.empty());  // nothing happened yet
  closed.peer.close();
  io.run_one_for(milliseconds(2000));
  asio::write(written.peer, asio::buffer("x", 1));
  io.run_one_for(milliseconds(2000));
  EXPECT_EQ(ends, (std::vector<LifelineEnd>{LifelineEnd::kClosed,
                                            LifelineEnd::kBytes}));
  quiet.ours.close();  // our own close ends the watch without a call
  io.run_for(milliseconds(50));
  EXPECT_EQ(ends.size(), 2u);
}

TEST(ShmTransportTest, AnotherHostIsNotThisOne) {
  EXPECT_FALSE(HostIdentity().empty());
  EXPECT_EQ(HostIdentity(), HostIdentity());
  EXPECT_EQ(*ParseTransport("shm"), Transport::kShm);
  Result<Transport> bad = ParseTransport("rdma");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--transport 'rdma': expected auto, tcp or shm");
}

}  // namespace
}  // namespace pstrain::net
