// DataReads, without sockets: the steps that read a frame's data section,
// in order or tagged, and the tags it refuses.

#include "net/data_reads.h"

#include <gtest/gtest.h>

namespace pstrain::net {
namespace {

using Step = DataReads::Step;

std::vector<asio::mutable_buffer> Buffers(std::vector<char>* bytes,
                                          std::vector<size_t> sizes) {
  std::vector<asio::mutable_buffer> out;
  size_t at = 0;
  for (size_t n : sizes) {
    out.emplace_back(bytes->data() + at, n);
    at += n;
  }
  return out;
}

wire::FrameHeader Header(bool tagged) {
  wire::FrameHeader h;
  h.type = wire::MsgType::kPush;
  h.flags = tagged ? wire::kFrameTagged : 0;
  return h;
}

void SetTag(DataReads* r, uint32_t g) {
  wire::EncodeFixed32(r->tag(), g);
}

TEST(DataReadsTest, InOrderReadsAllAtOnceOrPieceByPiece) {
  std::vector<char> bytes(6);
  const auto dst = Buffers(&bytes, {2, 4});
  DataReads r;
  r.Reset();
  ASSERT_TRUE(r.Start(Header(false), 6, dst).ok());
  Step s = r.Next();
  EXPECT_EQ(s.kind, Step::kBuffers);
  EXPECT_EQ(s.end, 2u);
  r.Done(s);
  EXPECT_EQ(r.Next().kind, Step::kDone);
  r.Reset();
  r.ReadPieceByPiece();
  ASSERT_TRUE(r.Start(Header(false), 6, dst).ok());
  s = r.Next();
  EXPECT_EQ(s.end, 1u);
  r.Done(s);
  EXPECT_EQ(r.Next().begin, 1u);
}

TEST(DataReadsTest, PiecesThatFitAreReadInPlaceUntilTheNextFrame) {
  std::vector<char> bytes(14);
  const auto dst = Buffers(&bytes, {4, 0, 10});
  DataReads r;
  r.Reset();
  r.ReadPieceByPiece();
  r.ReadInPlace(8);
  ASSERT_TRUE(r.Start(Header(false), 14, dst).ok());
  Step s = r.Next();
  EXPECT_EQ(s.kind, Step::kInPlace);
  EXPECT_EQ(s.end, 1u);
  r.Done(s);
  EXPECT_EQ(r.Next().kind, Step::kBuffers);  // nothing to offer
  r.Done(r.Next());
  EXPECT_EQ(r.Next().kind, Step::kBuffers);  // larger than the ring
  r.Reset();
  r.ReadPieceByPiece();
  ASSERT_TRUE(r.Start(Header(false), 14, dst).ok());
  EXPECT_EQ(r.Next().kind, Step::kBuffers);
  // Read all at once, a frame is never read in place.
  r.Reset();
  r.ReadInPlace(64);
  ASSERT_TRUE(r.Start(Header(false), 14, dst).ok());
  EXPECT_EQ(r.Next().kind, Step::kBuffers);
}

TEST(DataReadsTest, ATaggedFrameReadsEachDescriptorWhereItsTagSays) {
  std::vector<char> bytes(7);
  const auto dst = Buffers(&bytes, {3, 1, 1, 2});  // descriptor 1: 2 buffers
  DataReads r;
  r.Reset();
  r.Name({0, 1, 3});
  ASSERT_TRUE(r.Start(Header(true), 7 + 3 * wire::kTagBytes, dst).ok());
  EXPECT_EQ(r.Next().kind, Step::kTag);
  SetTag(&r, 1);
  ASSERT_TRUE(r.Take("push").ok());
  Step s = r.Next();
  EXPECT_EQ(s.kind, Step::kBuffers);
  EXPECT_EQ(s.begin, 1u);
  EXPECT_EQ(s.end, 3u);
  r.Done(s);
  SetTag(&r, 1);
  EXPECT_EQ(r.Next().kind, Step::kTag);
  EXPECT_EQ(r.Take("push").message(),
            "push: tag 1 comes twice, expected each descriptor once");
  SetTag(&r, 3);
  EXPECT_EQ(r.Take("push").message(),
            "push: tag 3 names no descriptor, expected below 3");
}

TEST(DataReadsTest, RefusesSizesThatDoNotAddUpAndUnnamedTaggedFrames) {
  std::vector<char> bytes(4);
  const auto dst = Buffers(&bytes, {4});
  DataReads r;
  r.Reset();
  EXPECT_EQ(r.Start(Header(true), 8, dst).message(),
            "push: tagged, but read here in the order of its meta");
  r.Name({0});
  EXPECT_EQ(r.Start(Header(true), 4, dst).message(),
            "frame data is 4 bytes, the buffers for it 8");
  EXPECT_TRUE(r.Start(Header(true), 8, dst).ok());
}

}  // namespace
}  // namespace pstrain::net
