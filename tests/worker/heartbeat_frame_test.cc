// HeartbeatFrame: the frame decodes as a heartbeat carrying the progress
// given, and a beat no longer than the last reuses its buffer.

#include "worker/heartbeat_frame.h"

#include <string>

#include <gtest/gtest.h>

#include "wire/frame.h"

namespace pstrain::worker {
namespace {

// The progress `frame` carries; fails the test on a frame that is not a
// well-formed heartbeat.
std::string BeatProgress(const std::string& frame) {
  wire::FrameHeader header;
  EXPECT_TRUE(wire::DecodeFrameHeader(frame.data(), 1 << 20, &header).ok());
  EXPECT_EQ(header.type, wire::MsgType::kHeartbeat);
  EXPECT_EQ(header.request_id, 0u);
  EXPECT_EQ(header.body_len, frame.size() - wire::kFrameHeaderBytes);
  const size_t meta_len =
      wire::DecodeFixed32(frame.data() + wire::kFrameHeaderBytes);
  const size_t at = wire::kFrameHeaderBytes + wire::kMetaLenBytes;
  EXPECT_EQ(at + meta_len, frame.size());
  wire::Heartbeat beat;
  EXPECT_TRUE(wire::DecodeMeta(std::string_view(frame).substr(at), &beat).ok());
  return beat.json;
}

TEST(HeartbeatFrameTest, EncodesTheProgressGiven) {
  HeartbeatFrame frame;
  EXPECT_EQ(BeatProgress(frame.Encode(R"({"step":3})")), R"({"step":3})");
  EXPECT_EQ(BeatProgress(frame.Encode("")), "");
}

TEST(HeartbeatFrameTest, ReusesItsBufferForAShorterBeat) {
  HeartbeatFrame frame;
  const char* first = frame.Encode(R"({"step":100})").data();
  const std::string& again = frame.Encode(R"({"step":7})");
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(BeatProgress(again), R"({"step":7})");
}

}  // namespace
}  // namespace pstrain::worker
