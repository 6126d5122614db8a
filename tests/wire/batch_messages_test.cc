// push_batch and batch_done (lib/wire/batch_messages.cc): golden bytes, a
// push_batch frame whole, round trips (a NaN loss keeps its bits), and
// every refusal, by decode and by ValidateFrame.

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "testing/alloc_counter.h"
#include "testing/bytes.h"
#include "wire/frame_reader.h"
#include "wire/messages.h"

namespace pstrain::wire {
namespace {

using pstrain::testing::AllocCounter;
using pstrain::testing::Bytes;
using pstrain::testing::Desc;

std::string U64(uint64_t v) {
  std::string s(8, '\0');
  EncodeFixed64(s.data(), v);
  return s;
}

// A descriptor's bytes, whatever its fields (EncodeMeta would refuse some).
std::string DescBytes(const TensorDesc& d) {
  std::string out(d.encoded_size(), '\0');
  EncodeTensorDesc(d, out.data());
  return out;
}

template <typename M>
std::string Meta(const M& m) {
  std::string meta = "stale bytes that EncodeMeta must clear";
  EncodeMeta(m, &meta);
  return meta;
}

// Decodes `meta` from a heap copy of exactly its size, so that a read past
// its end is caught by AddressSanitizer.
template <typename M>
Status Decode(const std::string& meta, M* out) {
  std::unique_ptr<char[]> copy(new char[meta.size() + 1]);
  std::memcpy(copy.get(), meta.data(), meta.size());
  return DecodeMeta(std::string_view(copy.get(), meta.size()), out);
}

Status Validate(MsgType type, const std::string& meta, uint64_t data_bytes) {
  FrameHeader h;
  h.type = type;
  h.body_len = kMetaLenBytes + meta.size() + data_bytes;
  return ValidateFrame(h, meta, data_bytes);
}

uint64_t BitsOf(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

double FromBits(uint64_t bits) {
  double v = 0;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// A push_batch's meta: version 3, then x and y as they are.
std::string BatchMeta(const TensorDesc& x, const TensorDesc& y) {
  return U64(3) + DescBytes(x) + DescBytes(y);
}

// Expects a push_batch of x and y refused by DecodeMeta and, as the meta
// of a frame whose data is as long as the descriptors say, by
// ValidateFrame, with `message`.
void ExpectRefused(const TensorDesc& x, const TensorDesc& y,
                   const std::string& message) {
  const std::string meta = BatchMeta(x, y);
  PushBatch out;
  Status s = Decode(meta, &out);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << message;
  EXPECT_EQ(s.message(), message);
  s = Validate(MsgType::kPushBatch, meta, x.nbytes + y.nbytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << message;
  EXPECT_EQ(s.message(), message);
}

const TensorDesc kX = Desc(0, DType::kFloat32, {2, 3});
const TensorDesc kY = Desc(1, DType::kInt64, {2});

TEST(BatchMessagesTest, GoldenBytes) {
  EXPECT_EQ(Meta(PushBatch{0x0102030405060708ull, kX, kY}),
            Bytes({8,  7, 6, 5, 4,    3,    2, 1,     // version
                   0,  0, 0, 0, 0x01, 0x00, 2,        // x: key 0, float32, raw
                   2,  0, 0, 0, 0,    0,    0, 0,     // dims[0]: 2 samples
                   3,  0, 0, 0, 0,    0,    0, 0,     // dims[1]
                   24, 0, 0, 0, 0,    0,    0, 0,     // nbytes
                   1,  0, 0, 0, 0x05, 0x00, 1,        // y: key 1, int64, raw
                   2,  0, 0, 0, 0,    0,    0, 0,     // dims[0]: 2 samples
                   16, 0, 0, 0, 0,    0,    0, 0}));  // nbytes
  EXPECT_EQ(Meta(BatchDone{9, 0.5, true}),
            Bytes({9, 0, 0, 0, 0, 0, 0, 0,        // version
                   0, 0, 0, 0, 0, 0, 0xE0, 0x3F,  // loss 0.5
                   0x01}));                       // flags: stop
  EXPECT_EQ(Meta(BatchDone{0x0A0B, -2.0, false}),
            Bytes({0x0B, 0x0A, 0, 0, 0, 0, 0, 0,  // version
                   0, 0, 0, 0, 0, 0, 0x00, 0xC0,  // loss -2.0
                   0x00}));                       // flags
}

TEST(BatchMessagesTest, PushBatchFrameCarriesXThenY) {
  const std::string x(24, 'x');
  const std::string y(16, 'y');
  const std::string meta = Meta(PushBatch{4, kX, kY});
  std::string frame;
  EncodeFramePrefix(MsgType::kPushBatch, 5, meta, x.size() + y.size(), &frame);
  frame += x + y;
  EXPECT_EQ(frame.substr(0, 12),
            Bytes({0x50, 0x53, 0x54, 0x52, 0x0c, 0x00, 21, 0, 0, 0, 0, 0}));
  EXPECT_EQ(meta.size(), 62u);  // version 8, x 15 + 16, y 15 + 8
  EXPECT_EQ(DecodeFixed64(frame.data() + 12), 4u + 62u + 40u);  // body_len
  FrameReader reader;
  std::string_view in = frame;
  ASSERT_EQ(reader.Feed(&in), FrameReader::State::kFrame)
      << reader.status().ToString();
  EXPECT_EQ(reader.header().type, MsgType::kPushBatch);
  EXPECT_EQ(reader.data(), x + y);
  PushBatch out;
  ASSERT_TRUE(DecodeMeta(reader.meta(), &out).ok());
  EXPECT_EQ(out.version, 4u);
  EXPECT_EQ(out.x.nbytes, 24u);
  EXPECT_EQ(out.y.nbytes, 16u);
}

TEST(BatchMessagesTest, PushBatchRoundTrips) {
  const PushBatch batches[] = {
      {0, kX, kY},
      {~uint64_t{0}, Desc(0, DType::kFloat32, {64, 1, 28, 28}),
       Desc(1, DType::kInt64, {64})},
      {7, Desc(0, DType::kFloat32, {1}), Desc(1, DType::kFloat32, {1, 1})},
      {8, Desc(0, DType::kFloat32, {3, 1, 1, 1, 1, 1, 1, 2}),
       Desc(1, DType::kFloat32, {3, 0})},  // a y of no elements per sample
  };
  for (const PushBatch& m : batches) {
    PushBatch out;
    ASSERT_TRUE(Decode(Meta(m), &out).ok()) << m.version;
    EXPECT_EQ(out.version, m.version);
    pstrain::testing::ExpectSameDescs({out.x, out.y}, {m.x, m.y});
    EXPECT_EQ(Meta(out), Meta(m));
    EXPECT_TRUE(
        Validate(MsgType::kPushBatch, Meta(m), m.x.nbytes + m.y.nbytes).ok());
  }
}

TEST(BatchMessagesTest, BatchDoneRoundTripsAnyLoss) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double loss : {0.0, -0.0, 2.302585, 1e308, -inf, inf,
                      std::numeric_limits<double>::denorm_min()}) {
    for (bool stop : {false, true}) {
      BatchDone out;
      ASSERT_TRUE(Decode(Meta(BatchDone{12, loss, stop}), &out).ok());
      EXPECT_EQ(out.version, 12u);
      EXPECT_EQ(BitsOf(out.loss), BitsOf(loss));
      EXPECT_EQ(out.stop, stop);
    }
  }
}

TEST(BatchMessagesTest, NaNLossKeepsItsBits) {
  // Quiet NaNs with a payload, of either sign, and a signalling NaN.
  for (uint64_t bits : {0x7FF8000000000000ull, 0x7FF80000DEADBEEFull,
                        0xFFF8000000000001ull, 0x7FF0000000000001ull}) {
    const std::string meta = Meta(BatchDone{1, FromBits(bits), false});
    EXPECT_EQ(meta.substr(8, 8), U64(bits));
    BatchDone out;
    ASSERT_TRUE(Decode(meta, &out).ok());
    EXPECT_EQ(BitsOf(out.loss), bits);
    EXPECT_EQ(Meta(out), meta);
  }
}

TEST(BatchMessagesTest, RefusesXOrYOfAnotherKeyOrCodec) {
  ExpectRefused(Desc(1, DType::kFloat32, {2, 3}), kY,
                "push_batch: x: key 1, expected 0");
  ExpectRefused(kX, Desc(0, DType::kInt64, {2}),
                "push_batch: y: key 0, expected 1");
  ExpectRefused(kX, Desc(2, DType::kInt64, {2}),
                "push_batch: y: key 2, expected 1");
  TensorDesc x = kX;
  x.codec = Codec::kFp16;
  x.nbytes = 12;
  ExpectRefused(x, kY, "push_batch: x: codec fp16, expected raw");
  TensorDesc y = Desc(1, DType::kFloat32, {2});
  y.codec = Codec::kOneBit;
  y.nbytes = 5;
  ExpectRefused(kX, y, "push_batch: y: codec onebit, expected raw");
  // The descriptor's own check: codecs need float32.
  y = kY;
  y.codec = Codec::kBf16;
  ExpectRefused(
      kX, y, "push_batch: y: codec bf16 on a int64 tensor, expected float32");
}

TEST(BatchMessagesTest, RefusesOtherDTypes) {
  ExpectRefused(Desc(0, DType::kInt64, {2, 3}), kY,
                "push_batch: x: dtype int64, expected float32");
  ExpectRefused(Desc(0, DType::kFloat64, {2, 3}), kY,
                "push_batch: x: dtype float64, expected float32");
  ExpectRefused(Desc(0, DType::kUInt8, {2, 3}), kY,
                "push_batch: x: dtype uint8, expected float32");
  ExpectRefused(kX, Desc(1, DType::kInt32, {2}),
                "push_batch: y: dtype int32, expected int64 or float32");
  ExpectRefused(kX, Desc(1, DType::kFloat16, {2}),
                "push_batch: y: dtype float16, expected int64 or float32");
}

TEST(BatchMessagesTest, RefusesScalarsAndEmptyBatches) {
  ExpectRefused(Desc(0, DType::kFloat32, {}), kY,
                "push_batch: x: ndim 0, expected at least 1 ([samples, ...])");
  ExpectRefused(kX, Desc(1, DType::kInt64, {}),
                "push_batch: y: ndim 0, expected at least 1 ([samples, ...])");
  ExpectRefused(
      Desc(0, DType::kFloat32, {0, 3}), Desc(1, DType::kInt64, {0}),
      "push_batch: x: dims[0] 0 (an empty batch), expected at least 1");
  ExpectRefused(
      kX, Desc(1, DType::kInt64, {0}),
      "push_batch: y: dims[0] 0 (an empty batch), expected at least 1");
}

TEST(BatchMessagesTest, RefusesXAndYOfDifferentSampleCounts) {
  ExpectRefused(Desc(0, DType::kFloat32, {8, 784}), Desc(1, DType::kInt64, {7}),
                "push_batch: x has 8 samples, y 7");
  ExpectRefused(Desc(0, DType::kFloat32, {1, 4}),
                Desc(1, DType::kFloat32, {4, 1}),
                "push_batch: x has 1 samples, y 4");
}

TEST(BatchMessagesTest, RefusesBadDescriptorsNamingTheField) {
  TensorDesc x = kX;
  x.nbytes = 23;
  ExpectRefused(x, kY,
                "push_batch: x: nbytes 23 != numel 6 x 4 bytes (float32)");
  TensorDesc y = kY;
  y.nbytes = 8;
  ExpectRefused(kX, y, "push_batch: y: nbytes 8 != numel 2 x 8 bytes (int64)");
  y = kY;
  y.dims[0] = -2;
  y.nbytes = 0;
  ExpectRefused(kX, y, "push_batch: y: dims[0] is -2, expected >= 0");
  PushBatch out;
  EXPECT_EQ(Decode(U64(3), &out).message(),
            "push_batch: x: truncated descriptor: 0 bytes left, need 15");
  EXPECT_EQ(Decode(U64(3) + DescBytes(kX), &out).message(),
            "push_batch: y: truncated descriptor: 0 bytes left, need 15");
  EXPECT_EQ(Decode("1234567", &out).message(),
            "push_batch: truncated at version: 7 bytes left, need 8");
  EXPECT_EQ(Decode(BatchMeta(kX, kY) + "!!", &out).message(),
            "push_batch: 2 trailing bytes");
}

TEST(BatchMessagesTest, ValidateFrameChecksTheDataSection) {
  const std::string meta = Meta(PushBatch{1, kX, kY});  // 24 + 16 bytes
  EXPECT_TRUE(Validate(MsgType::kPushBatch, meta, 40).ok());
  EXPECT_EQ(Validate(MsgType::kPushBatch, meta, 39).message(),
            "push_batch: data section is 39 bytes, descriptors say 40");
  EXPECT_EQ(Validate(MsgType::kPushBatch, meta, 41).message(),
            "push_batch: data section is 41 bytes, descriptors say 40");
  EXPECT_EQ(Validate(MsgType::kPushBatch, meta, 24).message(),
            "push_batch: data section is 24 bytes, descriptors say 40");
  EXPECT_EQ(Validate(MsgType::kPushBatch, meta, 0).message(),
            "push_batch: data section is 0 bytes, descriptors say 40");
  // Two descriptors of 2^63 bytes each: their sum passes 2^64.
  const TensorDesc x = Desc(0, DType::kFloat32, {int64_t{1} << 61});
  const TensorDesc y = Desc(1, DType::kFloat32, {int64_t{1} << 61});
  EXPECT_EQ(Validate(MsgType::kPushBatch, BatchMeta(x, y), 16).message(),
            "push_batch: data section is 16 bytes, descriptors say "
            "9223372036854775808 + 9223372036854775808");
  const std::string done = Meta(BatchDone{2, 0.25, false});
  EXPECT_TRUE(Validate(MsgType::kBatchDone, done, 0).ok());
  EXPECT_EQ(Validate(MsgType::kBatchDone, done, 8).message(),
            "batch_done: data section is 8 bytes, expected 0");
  // A push_batch's meta is no batch_done, nor a batch_done's a push_batch.
  EXPECT_EQ(Validate(MsgType::kBatchDone, meta, 0).message(),
            "batch_done: 45 trailing bytes");
  EXPECT_EQ(Validate(MsgType::kPushBatch, done, 0).message(),
            "push_batch: x: truncated descriptor: 9 bytes left, need 15");
}

TEST(BatchMessagesTest, BatchDoneRefusesUnknownFlagsAndTruncation) {
  std::string meta = Meta(BatchDone{1, 0.5, true});
  BatchDone out;
  for (int flags : {2, 3, 0x80, 0xFF}) {
    meta.back() = static_cast<char>(flags);
    EXPECT_EQ(Decode(meta, &out).message(),
              "batch_done: flags " + std::to_string(flags) +
                  " has unknown bits, expected 0 or 1");
  }
  EXPECT_EQ(Decode(std::string(16, '\0'), &out).message(),
            "batch_done: truncated at flags: 0 bytes left, need 1");
  EXPECT_EQ(Decode(std::string(12, '\0'), &out).message(),
            "batch_done: truncated at loss: 4 bytes left, need 8");
  EXPECT_EQ(Decode(std::string(18, '\0'), &out).message(),
            "batch_done: 1 trailing byte");
}

TEST(BatchMessagesTest, ValidatingAndDecodingAllocateNothing) {
  const std::string batch = Meta(PushBatch{1, kX, kY});
  const std::string done = Meta(BatchDone{2, 0.25, true});
  PushBatch batch_out;
  BatchDone done_out;
  AllocCounter allocs;
  const bool ok = Validate(MsgType::kPushBatch, batch, 40).ok() &&
                  Validate(MsgType::kBatchDone, done, 0).ok() &&
                  DecodeMeta(batch, &batch_out).ok() &&
                  DecodeMeta(done, &done_out).ok();
  allocs.Stop();
  EXPECT_TRUE(ok);
  EXPECT_EQ(allocs.count(), 0u);
}

TEST(BatchMessagesTest, EncodeRefusesWhatDecodeWould) {
  PushBatch m{1, kX, kY};
  m.x.key = 1;
  EXPECT_DEATH(Meta(m), "push_batch: x: key 1, expected 0");
  m = PushBatch{1, kX, Desc(1, DType::kInt32, {2})};
  EXPECT_DEATH(Meta(m),
               "push_batch: y: dtype int32, expected int64 or float32");
  m = PushBatch{1, kX, Desc(1, DType::kInt64, {3})};
  EXPECT_DEATH(Meta(m), "push_batch: x has 2 samples, y 3");
  m = PushBatch{1, kX, kY};
  m.y.nbytes = 15;
  EXPECT_DEATH(Meta(m), "push_batch: y: nbytes 15");
}

// A valid meta of an M with random bytes changed: an M that encodes back to
// those bytes, or a kCorruption. Returns how many decoded.
template <typename M>
int CountRandomDecodes(const M& m, std::mt19937_64* rng) {
  const std::string meta = Meta(m);
  int ok = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = meta;
    for (int j = 0; j < 1 + static_cast<int>((*rng)() % 3); ++j)
      bytes[(*rng)() % bytes.size()] = static_cast<char>((*rng)());
    M out;
    Status s = Decode(bytes, &out);
    EXPECT_TRUE(s.ok() || s.code() == StatusCode::kCorruption);
    if (s.ok()) {
      ++ok;
      EXPECT_EQ(Meta(out), bytes);
    }
  }
  return ok;
}

TEST(BatchMessagesTest, RandomMetaDecodesOrFails) {
  std::mt19937_64 rng(21);
  EXPECT_GT(CountRandomDecodes(PushBatch{3, kX, kY}, &rng), 0);
  EXPECT_GT(CountRandomDecodes(BatchDone{4, 0.75, false}, &rng), 0);
}

}  // namespace
}  // namespace pstrain::wire
