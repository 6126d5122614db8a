#include "wire/tensor_desc.h"

#include <limits>
#include <string>

#include "util/check.h"
#include "wire/frame.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {
namespace {

// key u32, dtype u8, codec u8, ndim u8: what must be read to learn ndim.
constexpr size_t kFixedBytes = 7;
// The fixed part plus nbytes: the size of a rank-0 descriptor.
constexpr size_t kMinDescBytes = kFixedBytes + 8;

Status Truncated(size_t left, size_t need) {
  return Corruption("truncated descriptor: " + std::to_string(left) +
                    " bytes left, need " + std::to_string(need));
}

// For the raw codec the data is exactly numel elements; a mismatch would
// make the receiver read too little or write past the tensor.
Status CheckNbytes(const TensorDesc& d) {
  const uint64_t numel = static_cast<uint64_t>(d.numel());  // >= 0, checked
  const uint64_t size = DTypeSize(d.dtype);
  auto what = [&] {
    return "numel " + std::to_string(numel) + " x " + std::to_string(size) +
           " bytes (" + DTypeName(d.dtype) + ")";
  };
  if (numel > std::numeric_limits<uint64_t>::max() / size) {
    return Corruption(what() + " overflows u64");
  }
  if (d.codec != Codec::kRaw) {
    // The exact size needs the job's CodecParams: the receiver checks it.
    if (d.dtype != DType::kFloat32) {
      return Corruption(std::string("codec ") + CodecName(d.codec) + " on a " +
                        DTypeName(d.dtype) + " tensor, expected float32");
    }
    if (d.nbytes > numel * 8) {
      return Corruption("nbytes " + std::to_string(d.nbytes) + " of " +
                        CodecName(d.codec) + " exceeds 8 x numel " +
                        std::to_string(numel));
    }
    return Status::Ok();
  }
  if (d.nbytes != numel * size) {
    return Corruption("nbytes " + std::to_string(d.nbytes) + " != " + what());
  }
  return Status::Ok();
}

}  // namespace

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat64:
      return 8;
    case DType::kFloat16:
      return 2;
    case DType::kBFloat16:
      return 2;
    case DType::kInt64:
      return 8;
    case DType::kInt32:
      return 4;
    case DType::kInt8:
      return 1;
    case DType::kUInt8:
      return 1;
  }
  PS_CHECK(false) << "invalid dtype " << static_cast<int>(dtype);
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt64:
      return "int64";
    case DType::kInt32:
      return "int32";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
  }
  return "unknown";
}

const char* CodecName(Codec codec) {
  switch (codec) {
    case Codec::kRaw:
      return "raw";
    case Codec::kFp16:
      return "fp16";
    case Codec::kBf16:
      return "bf16";
    case Codec::kInt8:
      return "int8";
    case Codec::kTopK:
      return "topk";
    case Codec::kOneBit:
      return "onebit";
  }
  return "unknown";
}

int64_t TensorDesc::numel() const {
  // Unsigned, so that an unchecked descriptor wraps instead of invoking
  // undefined behaviour; a decoded one never overflows (CheckDims).
  uint64_t n = 1;
  for (int i = 0; i < ndim && i < kMaxTensorRank; ++i) {
    n *= static_cast<uint64_t>(dims[i]);
  }
  return static_cast<int64_t>(n);
}

size_t EncodeTensorDesc(const TensorDesc& desc, char* out) {
  PS_CHECK(desc.ndim <= kMaxTensorRank) << "ndim " << int{desc.ndim};
  EncodeFixed32(out, desc.key);
  out[4] = static_cast<char>(desc.dtype);
  out[5] = static_cast<char>(desc.codec);
  out[6] = static_cast<char>(desc.ndim);
  char* p = out + kFixedBytes;
  for (int i = 0; i < desc.ndim; ++i, p += 8) {
    EncodeFixed64(p, static_cast<uint64_t>(desc.dims[i]));
  }
  EncodeFixed64(p, desc.nbytes);
  return desc.encoded_size();
}

Status DecodeTensorDesc(std::string_view* in, TensorDesc* out) {
  if (in->size() < kMinDescBytes)
    return Truncated(in->size(), kMinDescBytes);
  const char* p = in->data();
  const auto dtype = static_cast<uint8_t>(p[4]);
  const auto codec = static_cast<uint8_t>(p[5]);
  const auto ndim = static_cast<uint8_t>(p[6]);
  PS_RETURN_IF_ERROR(internal::CheckDType(dtype));
  if (codec > kMaxCodec) {
    return Corruption("codec " + std::to_string(codec) +
                      " is unknown, expected 0.." + std::to_string(kMaxCodec));
  }
  PS_RETURN_IF_ERROR(internal::CheckRank(ndim));
  const size_t size = kMinDescBytes + 8 * size_t{ndim};
  if (in->size() < size)
    return Truncated(in->size(), size);

  TensorDesc d;  // decoded aside, so *out is untouched on error
  d.key = DecodeFixed32(p);
  d.dtype = static_cast<DType>(dtype);
  d.codec = static_cast<Codec>(codec);
  d.ndim = ndim;
  for (int i = 0; i < ndim; ++i) {
    d.dims[i] = static_cast<int64_t>(DecodeFixed64(p + kFixedBytes + 8 * i));
  }
  d.nbytes = DecodeFixed64(p + kFixedBytes + 8 * size_t{ndim});
  PS_RETURN_IF_ERROR(internal::CheckDims(d.dims.data(), ndim));
  PS_RETURN_IF_ERROR(CheckNbytes(d));
  *out = d;
  in->remove_prefix(size);
  return Status::Ok();
}

}  // namespace pstrain::wire
