// get_module and module (lib/wire/module_messages.cc): a module frame whole,
// round trips, and every refusal of its sha256 and descriptor, by decode
// and by ValidateFrame. Golden meta bytes: messages_test.cc.

#include <cstring>
#include <memory>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "testing/bytes.h"
#include "wire/frame_reader.h"
#include "wire/messages.h"

namespace pstrain::wire {
namespace {

using pstrain::testing::Bytes;
using pstrain::testing::Desc;

// SHA-256 of "abc".
const std::string kSha =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

std::string U32(uint32_t v) {
  std::string s(4, '\0');
  EncodeFixed32(s.data(), v);
  return s;
}

std::string Str(const std::string& s) {
  return U32(static_cast<uint32_t>(s.size())) + s;
}

// A descriptor's bytes, whatever its fields (EncodeMeta would refuse some).
std::string DescBytes(const TensorDesc& d) {
  std::string out(d.encoded_size(), '\0');
  EncodeTensorDesc(d, out.data());
  return out;
}

std::string Meta(const ModuleMsg& m) {
  std::string meta = "stale bytes that EncodeMeta must clear";
  EncodeMeta(m, &meta);
  return meta;
}

// Decodes `meta` from a heap copy of exactly its size, so that a read past
// its end is caught by AddressSanitizer.
Status Decode(const std::string& meta, ModuleMsg* out) {
  std::unique_ptr<char[]> copy(new char[meta.size() + 1]);
  std::memcpy(copy.get(), meta.data(), meta.size());
  return DecodeMeta(std::string_view(copy.get(), meta.size()), out);
}

// Expects `meta` refused by DecodeMeta and, as the meta of a frame whose
// data matches its descriptor, by ValidateFrame, with `message`.
void ExpectRefused(const std::string& meta, uint64_t data_bytes,
                   const std::string& message) {
  ModuleMsg out;
  Status s = Decode(meta, &out);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << message;
  EXPECT_EQ(s.message(), message);
  FrameHeader h;
  h.type = MsgType::kModule;
  h.body_len = kMetaLenBytes + meta.size() + data_bytes;
  s = ValidateFrame(h, meta, data_bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << message;
  EXPECT_EQ(s.message(), message);
}

TEST(ModuleMessagesTest, ModuleFrameCarriesTheFileAsData) {
  const std::string file = "abc";
  std::string frame;
  const std::string meta = Meta(ModuleMsg{kSha, Desc(0, DType::kUInt8, {3})});
  EncodeFramePrefix(MsgType::kModule, 9, meta, file.size(), &frame);
  frame += file;
  EXPECT_EQ(frame.substr(0, 12),
            Bytes({0x50, 0x53, 0x54, 0x52, 0x0c, 0x00, 20, 0, 0, 0, 0, 0}));
  EXPECT_EQ(DecodeFixed64(frame.data() + 12), 4u + 91u + 3u);  // body_len
  EXPECT_EQ(meta.size(), 91u);  // str sha256 (4 + 64), descriptor (15 + 8)
  FrameReader reader;
  std::string_view in = frame;
  ASSERT_EQ(reader.Feed(&in), FrameReader::State::kFrame)
      << reader.status().ToString();
  EXPECT_EQ(reader.header().type, MsgType::kModule);
  EXPECT_EQ(reader.data(), file);
  ModuleMsg out;
  ASSERT_TRUE(DecodeMeta(reader.meta(), &out).ok());
  EXPECT_EQ(out.sha256, kSha);
  EXPECT_EQ(out.bytes.nbytes, 3u);
}

TEST(ModuleMessagesTest, RoundTripsAnySize) {
  // The descriptor alone: 45 MB (a scripted resnet18) is no string.
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{45} << 20}) {
    const ModuleMsg m{std::string(64, '0'), Desc(0, DType::kUInt8, {n})};
    ModuleMsg out;
    ASSERT_TRUE(Decode(Meta(m), &out).ok()) << n;
    EXPECT_EQ(out.sha256, m.sha256);
    EXPECT_EQ(out.bytes.ndim, 1);
    EXPECT_EQ(out.bytes.dims[0], n);
    EXPECT_EQ(out.bytes.nbytes, static_cast<uint64_t>(n));
  }
  GetModule get;
  EXPECT_TRUE(DecodeMeta("", &get).ok());
}

TEST(ModuleMessagesTest, RefusesSha256OfOtherLength) {
  const std::string desc = DescBytes(Desc(0, DType::kUInt8, {3}));
  ExpectRefused(Str(kSha.substr(1)) + desc, 3,
                "module: sha256 of 63 chars, expected 64");
  ExpectRefused(Str(kSha + "0") + desc, 3,
                "module: sha256 of 65 chars, expected 64");
  ExpectRefused(Str("") + desc, 3, "module: sha256 of 0 chars, expected 64");
  // Checked from the length, before anything else is read.
  ExpectRefused(U32(0xFFFFFFFF), 0,
                "module: sha256 of 4294967295 chars, expected 64");
  ExpectRefused(U32(64) + "ab", 0,
                "module: sha256 length 64 exceeds the 2 bytes left");
  ExpectRefused("", 0, "module: truncated at sha256: 0 bytes left, need 4");
}

TEST(ModuleMessagesTest, RefusesSha256ThatIsNotLowercaseHex) {
  const std::string desc = DescBytes(Desc(0, DType::kUInt8, {3}));
  std::string upper = kSha;
  upper[0] = 'B';
  ExpectRefused(Str(upper) + desc, 3,
                "module: sha256 byte 0x42 at 0 is not a lowercase hex digit");
  std::string g = kSha;
  g[63] = 'g';
  ExpectRefused(Str(g) + desc, 3,
                "module: sha256 byte 0x67 at 63 is not a lowercase hex digit");
  std::string newline = kSha;
  newline[5] = '\n';  // the message stays on one line
  ExpectRefused(Str(newline) + desc, 3,
                "module: sha256 byte 0x0A at 5 is not a lowercase hex digit");
}

TEST(ModuleMessagesTest, RefusesAnyOtherDescriptor) {
  const std::string sha = Str(kSha);
  TensorDesc d = Desc(1, DType::kUInt8, {3});
  ExpectRefused(sha + DescBytes(d), 3, "module: bytes: key 1, expected 0");
  d = Desc(0, DType::kFloat32, {3});
  ExpectRefused(sha + DescBytes(d), 12,
                "module: bytes: dtype float32, expected uint8");
  d = Desc(0, DType::kInt8, {3});
  ExpectRefused(sha + DescBytes(d), 3,
                "module: bytes: dtype int8, expected uint8");
  d = Desc(0, DType::kFloat32, {4});
  d.codec = Codec::kFp16;
  d.nbytes = 8;
  ExpectRefused(sha + DescBytes(d), 8,
                "module: bytes: codec fp16, expected raw");
  d = Desc(0, DType::kUInt8, {4});
  d.codec = Codec::kFp16;  // the descriptor's own check: codecs need float32
  ExpectRefused(sha + DescBytes(d), 4,
                "module: codec fp16 on a uint8 tensor, expected float32");
  d = Desc(0, DType::kUInt8, {});
  ExpectRefused(sha + DescBytes(d), 1,
                "module: bytes: ndim 0, expected 1 ([n])");
  d = Desc(0, DType::kUInt8, {3, 1});
  ExpectRefused(sha + DescBytes(d), 3,
                "module: bytes: ndim 2, expected 1 ([n])");
  d = Desc(0, DType::kUInt8, {3});
  d.nbytes = 4;
  ExpectRefused(sha + DescBytes(d), 4,
                "module: nbytes 4 != numel 3 x 1 bytes (uint8)");
  d.nbytes = 2;
  ExpectRefused(sha + DescBytes(d), 2,
                "module: nbytes 2 != numel 3 x 1 bytes (uint8)");
  ExpectRefused(sha, 0, "module: truncated descriptor: 0 bytes left, need 15");
  ExpectRefused(sha + DescBytes(Desc(0, DType::kUInt8, {3})) + "!", 3,
                "module: 1 trailing byte");
}

TEST(ModuleMessagesTest, ValidateFrameChecksTheDataSection) {
  const std::string meta = Meta(ModuleMsg{kSha, Desc(0, DType::kUInt8, {3})});
  auto check = [](MsgType type, const std::string& meta, uint64_t data) {
    FrameHeader h;
    h.type = type;
    h.body_len = kMetaLenBytes + meta.size() + data;
    return ValidateFrame(h, meta, data);
  };
  EXPECT_TRUE(check(MsgType::kModule, meta, 3).ok());
  EXPECT_EQ(check(MsgType::kModule, meta, 2).message(),
            "module: data section is 2 bytes, descriptors say 3");
  EXPECT_EQ(check(MsgType::kModule, meta, 4).message(),
            "module: data section is 4 bytes, descriptors say 3");
  EXPECT_TRUE(check(MsgType::kGetModule, "", 0).ok());
  EXPECT_EQ(check(MsgType::kGetModule, "", 1).message(),
            "get_module: data section is 1 bytes, expected 0");
  EXPECT_EQ(check(MsgType::kGetModule, "x", 0).message(),
            "get_module: 1 trailing byte");
  // A module's meta is no get_module, nor a get_module's a module.
  EXPECT_EQ(check(MsgType::kGetModule, meta, 0).message(),
            "get_module: 91 trailing bytes");
  EXPECT_EQ(check(MsgType::kModule, "", 0).message(),
            "module: truncated at sha256: 0 bytes left, need 4");
}

TEST(ModuleMessagesTest, EveryTruncationFails) {
  const std::string meta = Meta(ModuleMsg{kSha, Desc(0, DType::kUInt8, {7})});
  ModuleMsg out;
  ASSERT_TRUE(Decode(meta, &out).ok());
  for (size_t n = 0; n < meta.size(); ++n) {
    Status s = Decode(meta.substr(0, n), &out);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << n;
    EXPECT_EQ(s.message().rfind("module: ", 0), 0u) << s.message();
  }
}

TEST(ModuleMessagesTest, RandomMetaDecodesOrFails) {
  // A valid meta with random bytes changed: a module or a kCorruption.
  const std::string meta = Meta(ModuleMsg{kSha, Desc(0, DType::kUInt8, {7})});
  std::mt19937_64 rng(19);
  int ok = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string m = meta;
    for (int j = 0; j < 1 + static_cast<int>(rng() % 3); ++j)
      m[rng() % m.size()] = static_cast<char>(rng());
    ModuleMsg out;
    Status s = Decode(m, &out);
    EXPECT_TRUE(s.ok() || s.code() == StatusCode::kCorruption);
    if (s.ok()) {
      ++ok;
      EXPECT_EQ(Meta(out), m);  // what decodes encodes back to its bytes
    }
  }
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace pstrain::wire
