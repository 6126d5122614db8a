// A Connection checks every frame with wire::FrameParser, the parser the
// fuzzer runs, before its handler sees the part that is wrong: a raw peer
// on loopback sends one frame, good or bad in one field, and gets its
// reply or the error frame that names the field, then the close.

#include "net/connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <asio/connect.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

#include "net/listener.h"
#include "net/peer_host_watch.h"
#include "testing/bytes.h"
#include "wire/frame_reader.h"
#include "wire/messages.h"

namespace pstrain::net {
namespace {

using pstrain::testing::Desc;

// Counts what reaches the handler; reads data into a buffer of its own and
// acks each whole frame.
class Recorder : public Connection::Handler {
 public:
  Status OnHeader(Connection&, const wire::FrameHeader&) override {
    ++headers;
    return Status::Ok();
  }
  // A tagged push: each descriptor's bytes into a buffer of its own,
  // given to the connection as a group.
  Status OnMeta(Connection& c, const wire::FrameHeader& header,
                std::string_view meta, uint64_t data_bytes,
                std::vector<asio::mutable_buffer>* dst) override {
    ++metas;
    if ((header.flags & wire::kFrameTagged) == 0) {
      data_.resize(data_bytes);
      dst->emplace_back(data_.data(), data_.size());
      return Status::Ok();
    }
    wire::Push push;
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &push));
    descs.assign(push.grads.size(), std::string());
    std::vector<size_t> first;
    for (size_t i = 0; i < push.grads.size(); ++i) {
      descs[i].resize(push.grads[i].nbytes);
      first.push_back(dst->size());
      dst->emplace_back(descs[i].data(), descs[i].size());
    }
    c.ReadPieceByPiece();
    c.ReadTagged(first);
    return Status::Ok();
  }
  void OnPiece(Connection&, size_t index) override { pieces.push_back(index); }
  void OnFrame(Connection& c, const wire::FrameHeader& h,
               std::string_view) override {
    ++frames;
    FrameBuffers& f = c.NewFrame();
    f.Reset(wire::MsgType::kAck, h.request_id, {});
    c.Send(f);
  }
  void OnClose(Connection&, const Status& why) override {
    closed.set_value(why);
  }

  std::atomic<int> headers{0}, metas{0}, frames{0};
  std::promise<Status> closed;
  // A tagged push's, on the connection's thread; read once acked.
  std::vector<std::string> descs;
  std::vector<size_t> pieces;

 private:
  std::string data_;
};

// A Listener on a kernel-chosen loopback port with a Recorder behind it.
class Server {
 public:
  Server()
      : listener_(&io_, &recorder, {},
                  [this](auto c) { conns_.push_back(c); }) {
    EXPECT_TRUE(listener_.Listen("127.0.0.1", 0).ok());
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Server() {
    asio::post(io_, [this] {
      listener_.Close();
      for (auto& c : conns_)
        c->Close();
    });
    thread_.join();
  }
  int port() const { return listener_.port(); }
  Recorder recorder;

 private:
  asio::io_context io_;
  Listener listener_;
  std::vector<std::shared_ptr<Connection>> conns_;
  std::thread thread_;
};

struct Reply {
  wire::FrameHeader header;
  std::string meta;
};

// Sends `bytes` to the server, then reads frames until `want` are in or the
// server closes.
std::vector<Reply> Exchange(const Server& server, const std::string& bytes,
                            size_t want) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"),
                  static_cast<unsigned short>(server.port())});
  asio::write(socket, asio::buffer(bytes));
  std::vector<Reply> replies;
  wire::FrameReader reader;
  char buf[4096];
  while (replies.size() < want) {
    std::error_code ec;
    const size_t n = socket.read_some(asio::buffer(buf), ec);
    if (ec)
      break;
    std::string_view in(buf, n);
    while (!in.empty()) {
      const auto state = reader.Feed(&in);
      EXPECT_NE(state, wire::FrameReader::State::kError)
          << reader.status().ToString();
      if (state != wire::FrameReader::State::kFrame)
        break;
      replies.push_back({reader.header(), std::string(reader.meta())});
    }
  }
  return replies;
}

// A tagged push of three uint8 tensors of 3, 1 and 2 bytes; its data
// section `data`, tags included.
std::string TaggedPush(uint64_t request_id, const std::string& data) {
  wire::Push push{
      4,
      {Desc(0, wire::DType::kUInt8, {3}), Desc(1, wire::DType::kUInt8, {1}),
       Desc(2, wire::DType::kUInt8, {2})}};
  std::string meta, frame;
  wire::EncodeMeta(push, &meta);
  wire::EncodeFramePrefix(wire::MsgType::kPush, request_id, meta, data.size(),
                          &frame, wire::kFrameTagged);
  return frame + data;
}

std::string Tag(uint32_t index) {
  std::string tag(wire::kTagBytes, '\0');
  wire::EncodeFixed32(tag.data(), index);
  return tag;
}

template <typename Msg>
std::string Frame(const Msg& m, uint64_t request_id, const std::string& data) {
  std::string meta, frame;
  wire::EncodeMeta(m, &meta);
  wire::EncodeFramePrefix(wire::TypeOf(m), request_id, meta, data.size(),
                          &frame);
  return frame + data;
}

// Sends `bytes`; expects the error frame `message` answering `request_id`,
// the close with that Status, and the handler's counts.
void ExpectRefused(const std::string& bytes, uint64_t request_id,
                   const std::string& message, int headers, int metas) {
  Server server;
  const std::vector<Reply> replies = Exchange(server, bytes, 2);
  ASSERT_EQ(replies.size(), 1u) << message;  // the error, then the close
  EXPECT_EQ(replies[0].header.type, wire::MsgType::kError);
  EXPECT_EQ(replies[0].header.request_id, request_id);
  wire::ErrorMsg error;
  ASSERT_TRUE(wire::DecodeMeta(replies[0].meta, &error).ok());
  EXPECT_EQ(error.code, StatusCode::kCorruption);
  EXPECT_EQ(error.message, message);
  auto closed = server.recorder.closed.get_future();
  ASSERT_EQ(closed.wait_for(std::chrono::seconds(10)),
            std::future_status::ready);
  EXPECT_EQ(closed.get().message(), message);
  EXPECT_EQ(server.recorder.headers.load(), headers) << message;
  EXPECT_EQ(server.recorder.metas.load(), metas) << message;
  EXPECT_EQ(server.recorder.frames.load(), 0) << message;
}

TEST(ConnectionTest, AGoodFrameReachesTheHandlerWithItsData) {
  Server server;
  const std::string push =
      Frame(wire::Push{3, {Desc(0, wire::DType::kFloat32, {4})}}, 9,
            std::string(16, 'd'));
  const std::vector<Reply> replies = Exchange(server, push + push, 2);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[1].header.type, wire::MsgType::kAck);
  EXPECT_EQ(replies[1].header.request_id, 9u);
  EXPECT_EQ(server.recorder.metas.load(), 2);
  EXPECT_EQ(server.recorder.frames.load(), 2);
}

TEST(ConnectionTest, RefusesABadHeaderBeforeTheHandlerSeesIt) {
  std::string hello = Frame(wire::Hello{}, 5, "");
  hello[0] = 'X';
  ExpectRefused(hello, 0,
                "frame header: magic is 0x52545358, expected 0x52545350", 0, 0);
}

TEST(ConnectionTest, RefusesAMetaLenThatDoesNotFit) {
  std::string pull = Frame(wire::Pull{1}, 5, "");
  wire::EncodeFixed32(pull.data() + wire::kFrameHeaderBytes, 100);
  ExpectRefused(pull, 5, "frame: meta_len 100 does not fit in body_len 12 - 4",
                1, 0);
}

TEST(ConnectionTest, RefusesAMetaThatDoesNotDecodeBeforeOnMeta) {
  std::string meta = "abc", frame;
  wire::EncodeFramePrefix(wire::MsgType::kPull, 6, meta, 0, &frame);
  ExpectRefused(frame, 6,
                "pull: truncated at min_version: 3 bytes left, need 8", 1, 0);
}

TEST(ConnectionTest, RefusesDataTheDescriptorsDoNotAccountFor) {
  std::string meta, frame;
  wire::EncodeMeta(wire::Push{3, {Desc(0, wire::DType::kFloat32, {4})}}, &meta);
  wire::EncodeFramePrefix(wire::MsgType::kPush, 7, meta, 20, &frame);
  ExpectRefused(frame + std::string(20, 'd'), 7,
                "push: data section is 20 bytes, descriptors say 16", 1, 0);
  wire::EncodeMeta(wire::Pull{1}, &meta);
  wire::EncodeFramePrefix(wire::MsgType::kPull, 8, meta, 2, &frame);
  ExpectRefused(frame + "dd", 8, "pull: data section is 2 bytes, expected 0", 1,
                0);
}

}  // namespace
}  // namespace pstrain::net

namespace pstrain::net {
namespace {

TEST(ConnectionTest, ATaggedPushLandsEachDescriptorWhereItsTagSays) {
  Server server;
  const std::string data = Tag(2) + "ef" + Tag(0) + "abc" + Tag(1) + "d";
  const std::vector<Reply> replies = Exchange(server, TaggedPush(9, data), 1);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].header.type, wire::MsgType::kAck);
  EXPECT_EQ(server.recorder.descs,
            (std::vector<std::string>{"abc", "d", "ef"}));
  EXPECT_EQ(server.recorder.pieces, (std::vector<size_t>{2, 0, 1}));
}

TEST(ConnectionTest, RefusesATagThatNamesNoDescriptorOrComesTwice) {
  ExpectRefused(TaggedPush(7, Tag(3) + "abc" + Tag(1) + "d" + Tag(2) + "ef"), 7,
                "push: tag 3 names no descriptor, expected below 3", 1, 1);
  ExpectRefused(TaggedPush(8, Tag(1) + "d" + Tag(1) + "d" + Tag(2) + "efgh"), 8,
                "push: tag 1 comes twice, expected each descriptor once", 1, 1);
}

TEST(ConnectionTest, RefusesTaggedDataWithoutItsTagsOrOnAnotherMessage) {
  ExpectRefused(TaggedPush(7, "abcdef"), 7,
                "push: tensor 0: nbytes 3 and its tag exceed the 6 data "
                "bytes left",
                1, 0);
  std::string meta, frame;
  wire::EncodeMeta(wire::Pull{1}, &meta);
  wire::EncodeFramePrefix(wire::MsgType::kPull, 8, meta, 0, &frame,
                          wire::kFrameTagged);
  ExpectRefused(frame, 8,
                "pull: flags has the tagged bit, which only push, "
                "push_pull and params may carry",
                1, 0);
}

}  // namespace
}  // namespace pstrain::net

namespace pstrain::net {
namespace {

int IntOption(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, level, name, &value, &len), 0) << name;
  return value;
}

// --dead_after as the kernel's watch: probes every second once idle, and
// the connection aborted after that many unanswered probes; no user
// timeout, which would also cut a live peer that does not read.
TEST(ConnectionTest, WatchPeerHostSetsTheKernelsProbesFromDeadAfter) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(IntOption(fd, SOL_SOCKET, SO_KEEPALIVE), 0);
  WatchPeerHost(fd, 2.5);
  EXPECT_EQ(IntOption(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_KEEPIDLE), 1);
  EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_KEEPINTVL), 1);
  EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_KEEPCNT), 3);
  EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
  ::close(fd);
}

// Answers any frame with 64 MiB of data.
class BigReplies : public Recorder {
 public:
  void OnFrame(Connection& c, const wire::FrameHeader& h,
               std::string_view) override {
    data_.assign(64 << 20, 'x');
    wire::TensorDesc d;
    d.dtype = wire::DType::kUInt8;
    d.ndim = 1;
    d.dims[0] = static_cast<int64_t>(data_.size());
    d.nbytes = data_.size();
    wire::EncodeMeta(wire::Params{1, {d}, {}}, &meta_);
    FrameBuffers& f = c.NewFrame();
    f.Reset(wire::MsgType::kParams, h.request_id, meta_);
    f.AddData(data_.data(), data_.size());
    c.Send(f);
  }

 private:
  std::string data_, meta_;
};

// A live peer that does not read (its window shut) for several times
// --dead_after is not cut: its kernel acknowledges every probe. Linux's
// TCP_USER_TIMEOUT would have ended the connection after --dead_after.
TEST(ConnectionTest, APeerThatDoesNotReadIsNotCutAfterDeadAfter) {
  BigReplies handler;
  asio::io_context io;
  std::vector<std::shared_ptr<Connection>> conns;
  Listener listener(&io, &handler,
                    ConnectionOptions{wire::kDefaultMaxFrameBytes, 0.5},
                    [&conns](auto c) { conns.push_back(c); });
  ASSERT_TRUE(listener.Listen("127.0.0.1", 0).ok());
  std::thread thread([&io] { io.run(); });

  asio::io_context peer_io;
  asio::ip::tcp::socket peer(peer_io);
  peer.connect({asio::ip::make_address("127.0.0.1"),
                static_cast<unsigned short>(listener.port())});
  const int small = 4096;  // a small window, shut at once
  ::setsockopt(peer.native_handle(), SOL_SOCKET, SO_RCVBUF, &small,
               sizeof(small));
  std::string meta, frame;
  wire::EncodeMeta(wire::Pull{}, &meta);
  wire::EncodeFramePrefix(wire::MsgType::kPull, 1, meta, 0, &frame);
  asio::write(peer, asio::buffer(frame));
  auto closed = handler.closed.get_future();
  EXPECT_EQ(closed.wait_for(std::chrono::milliseconds(2500)),
            std::future_status::timeout);
  peer.close();
  EXPECT_EQ(closed.wait_for(std::chrono::seconds(60)),
            std::future_status::ready);
  asio::post(io, [&] {
    listener.Close();
    for (auto& c : conns)
      c->Close();
  });
  thread.join();
}

}  // namespace
}  // namespace pstrain::net
