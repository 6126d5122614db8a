#include "wire/tensor_desc.h"

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "testing/bytes.h"
#include "wire/frame.h"

namespace pstrain::wire {
namespace {

using pstrain::testing::Bytes;

TensorDesc Desc(DType dtype, std::vector<int64_t> dims, uint32_t key = 0) {
  TensorDesc d;
  d.key = key;
  d.dtype = dtype;
  d.ndim = static_cast<uint8_t>(dims.size());
  uint64_t numel = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    d.dims[i] = dims[i];
    numel *= static_cast<uint64_t>(dims[i]);
  }
  d.nbytes = numel * DTypeSize(dtype);
  return d;
}

std::string Encode(const TensorDesc& d) {
  std::string out(d.encoded_size(), '\0');
  EXPECT_EQ(EncodeTensorDesc(d, out.data()), d.encoded_size());
  return out;
}

// Decodes `bytes`, expecting kCorruption whose message contains `what`.
void ExpectCorrupt(const std::string& bytes, const std::string& what) {
  std::string_view in = bytes;
  TensorDesc out;
  out.key = 12345;
  Status s = DecodeTensorDesc(&in, &out);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << what;
  EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  EXPECT_EQ(in.size(), bytes.size()) << "input advanced on error";
  EXPECT_EQ(out.key, 12345u) << "output written on error";
}

void ExpectSameDesc(const TensorDesc& a, const TensorDesc& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.codec, b.codec);
  EXPECT_EQ(a.ndim, b.ndim);
  EXPECT_EQ(a.dims, b.dims);  // dims past ndim stay zero
  EXPECT_EQ(a.nbytes, b.nbytes);
}

constexpr DType kAllDTypes[] = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
    DType::kInt64,   DType::kInt32,   DType::kInt8,    DType::kUInt8};

TEST(TensorDescTest, DTypeSizesAndNames) {
  const size_t sizes[] = {4, 8, 2, 2, 8, 4, 1, 1};
  const char* names[] = {"float32", "float64", "float16", "bfloat16",
                         "int64",   "int32",   "int8",    "uint8"};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(static_cast<int>(kAllDTypes[i]), i + 1);
    EXPECT_EQ(DTypeSize(kAllDTypes[i]), sizes[i]);
    EXPECT_STREQ(DTypeName(kAllDTypes[i]), names[i]);
  }
  EXPECT_STREQ(DTypeName(static_cast<DType>(0)), "unknown");
  EXPECT_STREQ(DTypeName(static_cast<DType>(9)), "unknown");
}

TEST(TensorDescTest, CodecValuesAndNames) {
  const Codec codecs[] = {Codec::kRaw,  Codec::kFp16, Codec::kBf16,
                          Codec::kInt8, Codec::kTopK, Codec::kOneBit};
  const char* names[] = {"raw", "fp16", "bf16", "int8", "topk", "onebit"};
  for (int i = 0; i <= kLastCodec; ++i) {
    EXPECT_EQ(static_cast<int>(codecs[i]), i);
    EXPECT_STREQ(CodecName(codecs[i]), names[i]);
  }
  EXPECT_STREQ(CodecName(static_cast<Codec>(kLastCodec + 1)), "unknown");
}

TEST(TensorDescTest, GoldenBytes) {
  const std::string expected = Bytes({
      0x07, 0x01, 0x00, 0x00,                          // key 263
      0x01,                                            // dtype float32
      0x00,                                            // codec raw
      0x02,                                            // ndim
      0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // dims[0] 3
      0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // dims[1] 4
      0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // nbytes 48
  });
  EXPECT_EQ(Encode(Desc(DType::kFloat32, {3, 4}, 263)), expected);
  EXPECT_EQ(Encode(Desc(DType::kUInt8, {}, 0)),
            Bytes({0, 0, 0, 0, 8, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(TensorDescTest, NumelAndEncodedSize) {
  EXPECT_EQ(Desc(DType::kFloat32, {}).numel(), 1);
  EXPECT_EQ(Desc(DType::kFloat32, {}).encoded_size(), 15u);
  EXPECT_EQ(Desc(DType::kFloat32, {2, 0, 5}).numel(), 0);
  EXPECT_EQ(Desc(DType::kFloat32, {2, 3, 5}).numel(), 30);
  EXPECT_EQ(Desc(DType::kFloat32, {2, 3, 5}).encoded_size(), 39u);
}

TEST(TensorDescTest, RoundTripsEveryDTypeAndRank) {
  for (DType dtype : kAllDTypes) {
    for (int rank = 0; rank <= kMaxTensorRank; ++rank) {
      for (bool empty : {false, true}) {
        if (empty && rank == 0)
          continue;
        std::vector<int64_t> dims;
        for (int i = 0; i < rank; ++i)
          dims.push_back(1 + (i * 7) % 4);
        if (empty)
          dims[rank / 2] = 0;
        const TensorDesc d = Desc(dtype, dims, 1000u * rank + 1);
        const std::string bytes = Encode(d) + "rest";
        std::string_view in = bytes;
        TensorDesc out;
        ASSERT_TRUE(DecodeTensorDesc(&in, &out).ok())
            << DTypeName(dtype) << " rank " << rank;
        ExpectSameDesc(out, d);
        EXPECT_EQ(in, "rest");  // advanced past exactly one descriptor
      }
    }
  }
}

TEST(TensorDescTest, RejectsEveryTruncation) {
  const std::string bytes = Encode(Desc(DType::kInt32, {2, 3, 4}));
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string need = n < 15 ? "need 15" : "need 39";
    ExpectCorrupt(
        bytes.substr(0, n),
        "truncated descriptor: " + std::to_string(n) + " bytes left, " + need);
  }
}

TEST(TensorDescTest, RejectsUnknownDTypeAndCodec) {
  std::string bytes = Encode(Desc(DType::kFloat32, {2}));
  for (int v : {0, 9, 255}) {
    bytes[4] = static_cast<char>(v);
    ExpectCorrupt(bytes,
                  "dtype " + std::to_string(v) + " is unknown, expected 1..8");
  }
  bytes = Encode(Desc(DType::kFloat32, {2}));
  for (int v : {6, 255}) {
    bytes[5] = static_cast<char>(v);
    ExpectCorrupt(bytes,
                  "codec " + std::to_string(v) + " is unknown, expected 0..5");
  }
}

// A compressed record's exact size needs the job's CodecParams; the
// descriptor checks what it can alone.
TEST(TensorDescTest, CompressedCodecsAreFloat32AndAtMostEightBytesEach) {
  TensorDesc d = Desc(DType::kFloat32, {3});
  for (int v = 1; v <= 5; ++v) {
    d.codec = static_cast<Codec>(v);
    d.nbytes = 24;  // topk with R = 1: 8 bytes per element
    std::string bytes = Encode(d);
    std::string_view in = bytes;
    TensorDesc out;
    ASSERT_TRUE(DecodeTensorDesc(&in, &out).ok()) << v;
    EXPECT_EQ(out.codec, d.codec);
    EXPECT_EQ(out.nbytes, 24u);
    d.nbytes = 25;
    ExpectCorrupt(Encode(d), std::string("nbytes 25 of ") + CodecName(d.codec) +
                                 " exceeds 8 x numel 3");
  }
  d = Desc(DType::kFloat64, {3});
  d.codec = Codec::kFp16;
  d.nbytes = 6;
  ExpectCorrupt(Encode(d), "codec fp16 on a float64 tensor, expected float32");
}

TEST(TensorDescTest, RejectsRankAboveEight) {
  // A well-formed rank-9 descriptor: only ndim is wrong.
  std::string bytes = Bytes({0, 0, 0, 0, 1, 0, 9});
  for (int i = 0; i < 9; ++i)
    bytes += Bytes({1, 0, 0, 0, 0, 0, 0, 0});
  bytes += Bytes({4, 0, 0, 0, 0, 0, 0, 0});
  ExpectCorrupt(bytes, "ndim 9 exceeds 8");
  bytes[6] = static_cast<char>(255);
  ExpectCorrupt(bytes, "ndim 255 exceeds 8");
}

TEST(TensorDescTest, RejectsNegativeDim) {
  TensorDesc d = Desc(DType::kFloat32, {2, 3, 4});
  d.dims[1] = -3;
  ExpectCorrupt(Encode(d), "dims[1] is -3, expected >= 0");
  d.dims[1] = INT64_MIN;
  ExpectCorrupt(Encode(d), "dims[1] is -9223372036854775808, expected >= 0");
}

TEST(TensorDescTest, RejectsDimsProductOverflow) {
  TensorDesc d = Desc(DType::kUInt8, {1});
  d.ndim = 3;
  d.dims = {int64_t{1} << 31, int64_t{1} << 31, 4};  // 2^64
  ExpectCorrupt(Encode(d), "dims product overflows int64 at dims[2]");
  d.dims = {INT64_MAX, 2, 0};
  ExpectCorrupt(Encode(d), "dims product overflows int64 at dims[1]");
  // Zero elements, but strides of [0, 2^62, 2^62] still overflow int64.
  d.dims = {0, int64_t{1} << 62, int64_t{1} << 62};
  d.nbytes = 0;
  ExpectCorrupt(Encode(d), "dims product overflows int64 at dims[2]");
}

TEST(TensorDescTest, RejectsNbytesShapeMismatch) {
  TensorDesc d = Desc(DType::kFloat32, {4});
  d.nbytes = 12;
  ExpectCorrupt(Encode(d), "nbytes 12 != numel 4 x 4 bytes (float32)");
  d = Desc(DType::kBFloat16, {2, 0});
  d.nbytes = 1;
  ExpectCorrupt(Encode(d), "nbytes 1 != numel 0 x 2 bytes (bfloat16)");
  d = Desc(DType::kInt8, {});
  d.nbytes = 0;
  ExpectCorrupt(Encode(d), "nbytes 0 != numel 1 x 1 bytes (int8)");
}

TEST(TensorDescTest, RejectsByteCountOverflow) {
  TensorDesc d = Desc(DType::kFloat64, {1});
  d.dims[0] = int64_t{1} << 62;  // numel fits int64, x 8 bytes does not fit u64
  d.nbytes = 0;
  ExpectCorrupt(Encode(d),
                "numel 4611686018427387904 x 8 bytes (float64) overflows u64");
}

TEST(TensorDescTest, DecodesBackToBackDescriptors) {
  const TensorDesc a = Desc(DType::kInt64, {5}, 1);
  const TensorDesc b = Desc(DType::kFloat16, {2, 2}, 2);
  const std::string bytes = Encode(a) + Encode(b);
  std::string_view in = bytes;
  TensorDesc out;
  ASSERT_TRUE(DecodeTensorDesc(&in, &out).ok());
  ExpectSameDesc(out, a);
  ASSERT_TRUE(DecodeTensorDesc(&in, &out).ok());
  ExpectSameDesc(out, b);
  EXPECT_TRUE(in.empty());
}

}  // namespace
}  // namespace pstrain::wire
