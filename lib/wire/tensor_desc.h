#pragma once
// TensorDesc: the descriptor that precedes a tensor's raw bytes on the wire.
// Encoded (little-endian) as
//   u32 key, u8 dtype, u8 codec, u8 ndim, i64 dims[ndim], u64 nbytes
// i.e. 15 + 8 * ndim bytes. Data itself is contiguous and little-endian, and
// travels in the frame's data section, apart from the descriptors.
// A value type with no heap storage, so decoding allocates nothing.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "util/status.h"

namespace pstrain::wire {

/// Element types. Explicit values; never renumber.
enum class DType : uint8_t {
  kFloat32 = 1,
  kFloat64 = 2,
  kFloat16 = 3,
  kBFloat16 = 4,
  kInt64 = 5,
  kInt32 = 6,
  kInt8 = 7,
  kUInt8 = 8,
};
inline constexpr uint8_t kMaxDType = 8;

/// How the bytes are coded. kRaw: the elements as they are in memory. The
/// others are float32 tensors compressed as wire/compression.h lays them out.
/// Explicit values; never renumber.
enum class Codec : uint8_t {
  kRaw = 0,
  kFp16 = 1,    // IEEE half per element
  kBf16 = 2,    // bfloat16 per element
  kInt8 = 3,    // per-chunk max scale, stochastic int8 (QSGD)
  kTopK = 4,    // the k largest |x|: u32 indices, then float32 values
  kOneBit = 5,  // per-chunk mean |x| scale, one sign bit per element
};
/// The largest Codec value this build defines (wire/compression.h codes it).
inline constexpr uint8_t kLastCodec = 5;
/// The largest codec a descriptor may carry (wire version 5 on).
inline constexpr uint8_t kMaxCodec = kLastCodec;

inline constexpr int kMaxTensorRank = 8;

/// Bytes per element: 4, 8, 2, 2, 8, 4, 1, 1. REQUIRES: a valid DType.
size_t DTypeSize(DType dtype);
/// "float32", "bfloat16", ...; "unknown" for invalid values.
const char* DTypeName(DType dtype);
/// "raw", "fp16", "bf16", "int8", "topk", "onebit"; "unknown" for values
/// above kLastCodec. These are the names the --compress flag will take.
const char* CodecName(Codec codec);

struct TensorDesc {
  uint32_t key = 0;
  DType dtype = DType::kFloat32;
  Codec codec = Codec::kRaw;
  uint8_t ndim = 0;                            // 0..kMaxTensorRank; 0 = scalar
  std::array<int64_t, kMaxTensorRank> dims{};  // dims[0..ndim), each >= 0
  uint64_t nbytes = 0;                         // bytes of data that follow

  /// Product of dims (1 for a scalar, 0 if any dim is 0).
  int64_t numel() const;
  /// Encoded size in bytes: 15 + 8 * ndim.
  size_t encoded_size() const { return 15 + 8 * size_t{ndim}; }
};

/// Appends the encoded descriptor to out[0..); returns bytes written.
/// REQUIRES: out has room for desc.encoded_size().
size_t EncodeTensorDesc(const TensorDesc& desc, char* out);

/// Decodes one descriptor from the front of `*in` and advances `*in` past it.
/// Returns kCorruption naming the field for: too few bytes, unknown dtype or
/// codec, ndim > 8, a negative dim, a dims product that overflows,
/// nbytes != numel * DTypeSize (raw codec), or, for a compressed codec, a
/// dtype other than float32 or nbytes above 8 * numel (no codec's record
/// is larger: topk with R = 1). The exact size of a compressed record
/// depends on the job's CodecParams, which the receiver checks
/// (wire::CompressedBytes). Never reads past `in`.
Status DecodeTensorDesc(std::string_view* in, TensorDesc* out);

}  // namespace pstrain::wire
