#include "wire/frame.h"

#include <cstring>
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

#include "testing/bytes.h"

namespace pstrain::wire {
namespace {

using pstrain::testing::Bytes;

std::string Encode(const FrameHeader& h) {
  std::string out(kFrameHeaderBytes, '\0');
  EncodeFrameHeader(h, out.data());
  return out;
}

FrameHeader ValidHeader() {
  FrameHeader h;
  h.type = MsgType::kPushPull;
  h.body_len = 100;
  h.request_id = 7;
  return h;
}

Status Decode(const std::string& bytes, uint64_t max = kDefaultMaxFrameBytes) {
  FrameHeader out;
  return DecodeFrameHeader(bytes.data(), max, &out);
}

TEST(FrameTest, FixedCodingIsLittleEndian) {
  char buf[8];
  EncodeFixed16(buf, 0xA1B2);
  EXPECT_EQ(std::string(buf, 2), Bytes({0xB2, 0xA1}));
  EncodeFixed32(buf, 0xA1B2C3D4);
  EXPECT_EQ(std::string(buf, 4), Bytes({0xD4, 0xC3, 0xB2, 0xA1}));
  EncodeFixed64(buf, 0x0102030405060708ull);
  EXPECT_EQ(std::string(buf, 8), Bytes({8, 7, 6, 5, 4, 3, 2, 1}));

  const std::string high =
      Bytes({0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0xFA, 0xF9, 0xF8});
  EXPECT_EQ(DecodeFixed16(high.data()), 0xFEFF);
  EXPECT_EQ(DecodeFixed32(high.data()), 0xFCFDFEFFu);
  EXPECT_EQ(DecodeFixed64(high.data()), 0xF8F9FAFBFCFDFEFFull);
}

TEST(FrameTest, HeaderGoldenBytes) {
  FrameHeader h;
  h.type = MsgType::kPushPull;
  h.flags = 0;
  h.body_len = 0x0102030405060708ull;
  h.request_id = 0x1122334455667788ull;
  const std::string expected = Bytes({
      0x50, 0x53, 0x54, 0x52,                          // magic "PSTR"
      0x0c, 0x00,                                      // version 12
      0x08, 0x00,                                      // type push_pull
      0x00, 0x00, 0x00, 0x00,                          // flags
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // body_len
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // request_id
  });
  EXPECT_EQ(Encode(h), expected);
  EXPECT_EQ(std::string(Encode(h).data(), 4), "PSTR");
}

TEST(FrameTest, HeaderRoundTripsEveryType) {
  for (uint16_t t = 1; t <= kMaxMsgType; ++t) {
    FrameHeader h = ValidHeader();
    h.type = static_cast<MsgType>(t);
    h.body_len = kDefaultMaxFrameBytes;  // the limit itself is allowed
    h.request_id = ~uint64_t{0} - t;
    FrameHeader out;
    ASSERT_TRUE(
        DecodeFrameHeader(Encode(h).data(), kDefaultMaxFrameBytes, &out).ok());
    EXPECT_EQ(out.version, kWireVersion);
    EXPECT_EQ(out.type, h.type);
    EXPECT_EQ(out.flags, 0u);
    EXPECT_EQ(out.body_len, h.body_len);
    EXPECT_EQ(out.request_id, h.request_id);
  }
}

TEST(FrameTest, RejectsWrongMagic) {
  std::string bytes = Encode(ValidHeader());
  std::memset(bytes.data(), 0, 4);
  Status s = Decode(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(),
            "frame header: magic is 0x00000000, expected 0x52545350");
  bytes[0] = 'G';  // an HTTP client: "GET "
  bytes[1] = 'E';
  bytes[2] = 'T';
  bytes[3] = ' ';
  EXPECT_EQ(Decode(bytes).message(),
            "frame header: magic is 0x20544547, expected 0x52545350");
}

TEST(FrameTest, RejectsOtherVersionAsIncompatible) {
  for (uint16_t v : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 0xFFFF}) {
    FrameHeader h = ValidHeader();
    h.version = v;
    Status s = Decode(Encode(h));
    EXPECT_EQ(s.code(), StatusCode::kIncompatible);
    EXPECT_EQ(s.message(), "protocol version " + std::to_string(v) +
                               ", this build speaks 12");
  }
}

TEST(FrameTest, RejectsUnknownType) {
  for (uint16_t t : {0, 26, 0x0100, 0xFFFF}) {
    FrameHeader h = ValidHeader();
    h.type = static_cast<MsgType>(t);
    Status s = Decode(Encode(h));
    EXPECT_EQ(s.code(), StatusCode::kCorruption);
    EXPECT_EQ(s.message(), "frame header: type " + std::to_string(t) +
                               " is unknown, expected 1..25");
  }
}

TEST(FrameTest, RejectsEveryUnknownFlagBit) {
  for (int bit = 1; bit < 32; ++bit) {  // bit 0 is kFrameTagged
    FrameHeader h = ValidHeader();
    h.flags = uint32_t{1} << bit;
    Status s = Decode(Encode(h));
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << bit;
    EXPECT_NE(s.message().find("frame header: flags 0x"), std::string::npos);
    EXPECT_NE(s.message().find("has unknown bits"), std::string::npos);
  }
  FrameHeader h = ValidHeader();
  h.flags = 0x5;
  EXPECT_EQ(Decode(Encode(h)).message(),
            "frame header: flags 0x00000005 has unknown bits 0x00000004, "
            "expected only 0x00000001");
  h.flags = kFrameTagged;
  FrameHeader out;
  ASSERT_TRUE(
      DecodeFrameHeader(Encode(h).data(), kDefaultMaxFrameBytes, &out).ok());
  EXPECT_EQ(out.flags, kFrameTagged);
}

TEST(FrameTest, RejectsOversizeBody) {
  FrameHeader h = ValidHeader();
  h.body_len = 9000000000ull;
  Status s = Decode(Encode(h));
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(),
            "frame header: body_len 9000000000 exceeds max_frame_bytes "
            "4294967296");

  h.body_len = uint64_t{1} << 60;
  EXPECT_EQ(Decode(Encode(h), 1 << 20).message(),
            "frame header: body_len 1152921504606846976 exceeds "
            "max_frame_bytes 1048576");
  h.body_len = (1 << 20) + 1;
  EXPECT_EQ(Decode(Encode(h), 1 << 20).code(), StatusCode::kCorruption);
  h.body_len = 1 << 20;
  EXPECT_TRUE(Decode(Encode(h), 1 << 20).ok());
}

TEST(FrameTest, RejectsBodyTooShortForMetaLen) {
  for (uint64_t len : {0, 1, 3}) {
    FrameHeader h = ValidHeader();
    h.body_len = len;
    Status s = Decode(Encode(h));
    EXPECT_EQ(s.code(), StatusCode::kCorruption);
    EXPECT_EQ(s.message(), "frame header: body_len " + std::to_string(len) +
                               " is less than 4, the size of meta_len");
  }
  FrameHeader h = ValidHeader();
  h.body_len = 4;
  EXPECT_TRUE(Decode(Encode(h)).ok());
}

TEST(FrameTest, LeavesOutputAloneOnError) {
  FrameHeader h = ValidHeader();
  h.flags = 2;
  FrameHeader out;
  out.request_id = 99;
  EXPECT_FALSE(
      DecodeFrameHeader(Encode(h).data(), kDefaultMaxFrameBytes, &out).ok());
  EXPECT_EQ(out.request_id, 99u);
}

TEST(FrameTest, ChecksMagicThenVersionThenType) {
  // A frame that is wrong everywhere reports the first field: a peer of
  // another version must hear "version", not a confusing later field.
  FrameHeader h = ValidHeader();
  h.version = kWireVersion + 1;
  h.type = static_cast<MsgType>(99);
  h.flags = 8;
  EXPECT_EQ(Decode(Encode(h)).code(), StatusCode::kIncompatible);
  h.version = kWireVersion;
  EXPECT_NE(Decode(Encode(h)).message().find("type 99"), std::string::npos);
}

TEST(FrameTest, MsgTypeNames) {
  const char* names[] = {
      "hello",      "error",      "get_job",   "job_spec",   "register",
      "ack",        "pull",       "push_pull", "params",     "done",
      "push",       "auth_hello", "challenge", "auth",       "server_info",
      "shard",      "heartbeat",  "snapshot",  "get_module", "module",
      "push_batch", "batch_done", "shm_offer", "shm_ticket", "step_record"};
  for (uint16_t t = 1; t <= kMaxMsgType; ++t) {
    EXPECT_STREQ(MsgTypeName(static_cast<MsgType>(t)), names[t - 1]);
  }
  EXPECT_STREQ(MsgTypeName(static_cast<MsgType>(0)), "unknown");
  EXPECT_STREQ(MsgTypeName(static_cast<MsgType>(26)), "unknown");
}

TEST(FrameTest, TheMessageTableSaysWhichTypesCarryTensors) {
  EXPECT_EQ(kMaxMsgType, 25);
  EXPECT_FALSE(IsMsgType(0));
  for (uint16_t t = 1; t <= kMaxMsgType; ++t) {
    EXPECT_TRUE(IsMsgType(t)) << t;
  }
  EXPECT_FALSE(IsMsgType(26));
  for (uint16_t t = 1; t <= kMaxMsgType; ++t) {
    const MsgType type = static_cast<MsgType>(t);
    const bool tensors = type == MsgType::kPushPull || type == MsgType::kPush ||
                         type == MsgType::kParams || type == MsgType::kShard ||
                         type == MsgType::kStepRecord ||
                         type == MsgType::kModule ||
                         type == MsgType::kPushBatch;
    EXPECT_EQ(DataSectionOf(type),
              tensors ? DataSection::kTensors : DataSection::kNone)
        << MsgTypeName(type);
  }
}

}  // namespace
}  // namespace pstrain::wire
