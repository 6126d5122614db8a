#include "ps/job/tensor_codec.h"

#include <sstream>

#include <torch/nn/module.h>

#include "models/model_state.h"

namespace pstrain::ps {

Result<wire::DType> ToWireDType(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return wire::DType::kFloat32;
    case c10::ScalarType::Double:
      return wire::DType::kFloat64;
    case c10::ScalarType::Half:
      return wire::DType::kFloat16;
    case c10::ScalarType::BFloat16:
      return wire::DType::kBFloat16;
    case c10::ScalarType::Long:
      return wire::DType::kInt64;
    case c10::ScalarType::Int:
      return wire::DType::kInt32;
    case c10::ScalarType::Char:
      return wire::DType::kInt8;
    case c10::ScalarType::Byte:
      return wire::DType::kUInt8;
    default:
      return InvalidArgument(std::string("dtype ") + c10::toString(type) +
                             " cannot travel on the wire");
  }
}

c10::ScalarType ToScalarType(wire::DType dtype) {
  switch (dtype) {
    case wire::DType::kFloat32:
      return c10::ScalarType::Float;
    case wire::DType::kFloat64:
      return c10::ScalarType::Double;
    case wire::DType::kFloat16:
      return c10::ScalarType::Half;
    case wire::DType::kBFloat16:
      return c10::ScalarType::BFloat16;
    case wire::DType::kInt64:
      return c10::ScalarType::Long;
    case wire::DType::kInt32:
      return c10::ScalarType::Int;
    case wire::DType::kInt8:
      return c10::ScalarType::Char;
    case wire::DType::kUInt8:
      return c10::ScalarType::Byte;
  }
  PS_CHECK(false) << "invalid wire dtype " << static_cast<int>(dtype);
  return c10::ScalarType::Float;
}

wire::TensorDesc DescribeTensor(uint32_t key, const at::Tensor& t) {
  auto dtype = ToWireDType(t.scalar_type());
  PS_CHECK(dtype.ok()) << dtype.status().ToString();
  PS_CHECK(t.dim() <= wire::kMaxTensorRank) << "rank " << t.dim();
  wire::TensorDesc d;
  d.key = key;
  d.dtype = *dtype;
  d.ndim = static_cast<uint8_t>(t.dim());
  for (int64_t i = 0; i < t.dim(); ++i)
    d.dims[i] = t.size(i);
  d.nbytes = t.nbytes();
  return d;
}

wire::TensorDesc DescribeBytes(uint32_t key, uint64_t nbytes) {
  wire::TensorDesc d;
  d.key = key;
  d.dtype = wire::DType::kUInt8;
  d.ndim = 1;
  d.dims[0] = static_cast<int64_t>(nbytes);
  d.nbytes = nbytes;
  return d;
}

namespace {

std::string Shape(const int64_t* dims, size_t n) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < n; ++i)
    s << (i ? "," : "") << dims[i];
  s << "]";
  return s.str();
}

}  // namespace

Status CheckDescMatches(const wire::TensorDesc& desc, uint32_t key,
                        const at::Tensor& t, const char* what,
                        wire::Codec codec) {
  wire::TensorDesc want = DescribeTensor(key, t);
  bool same = desc.key == want.key && desc.dtype == want.dtype &&
              desc.ndim == want.ndim && desc.codec == codec;
  for (int i = 0; same && i < desc.ndim; ++i)
    same = desc.dims[i] == want.dims[i];
  if (same)
    return Status::Ok();
  auto in = [](wire::Codec c) {
    return c == wire::Codec::kRaw ? std::string()
                                  : std::string(" in ") + wire::CodecName(c);
  };
  return Corruption(
      std::string(what) + ": tensor " + std::to_string(key) + " is key " +
      std::to_string(desc.key) + " " + wire::DTypeName(desc.dtype) + " " +
      Shape(desc.dims.data(), desc.ndim) + in(desc.codec) + ", expected key " +
      std::to_string(key) + " " + wire::DTypeName(want.dtype) + " " +
      Shape(want.dims.data(), want.ndim) + in(codec));
}

Status CheckBytesDesc(const wire::TensorDesc& desc, uint32_t key,
                      const char* what) {
  if (desc.key == key && desc.dtype == wire::DType::kUInt8 && desc.ndim == 1 &&
      desc.codec == wire::Codec::kRaw) {
    return Status::Ok();
  }
  return Corruption(std::string(what) + ": tensor " + std::to_string(key) +
                    " is key " + std::to_string(desc.key) + " " +
                    wire::DTypeName(desc.dtype) + " " +
                    Shape(desc.dims.data(), desc.ndim) + ", expected key " +
                    std::to_string(key) + " uint8 [n]");
}

wire::KeySpec KeySpecOf(const std::string& name, const at::Tensor& t) {
  auto dtype = ToWireDType(t.scalar_type());
  PS_CHECK(dtype.ok()) << dtype.status().ToString();
  return wire::KeySpec{name, *dtype, t.sizes().vec()};
}

std::vector<wire::KeySpec> Fingerprint(const torch::nn::Module& model) {
  std::vector<wire::KeySpec> keys;
  for (const auto& s : models::ModelState(model))
    keys.push_back(KeySpecOf(s.name, s.value));
  return keys;
}

std::string DescribeKeySpec(const wire::KeySpec& k) {
  return std::string(wire::DTypeName(k.dtype)) + " " +
         Shape(k.shape.data(), k.shape.size());
}

Status CompareFingerprints(const std::vector<wire::KeySpec>& server,
                           const std::vector<wire::KeySpec>& worker) {
  size_t n = std::min(server.size(), worker.size());
  for (size_t i = 0; i < n; ++i) {
    if (server[i] == worker[i])
      continue;
    std::string name =
        server[i].name == worker[i].name
            ? "'" + server[i].name + "'"
            : "'" + server[i].name + "' (worker: '" + worker[i].name + "')";
    return Incompatible("model differs at key " + std::to_string(i) + " " +
                        name + ": server has " + DescribeKeySpec(server[i]) +
                        ", worker has " + DescribeKeySpec(worker[i]));
  }
  if (server.size() != worker.size()) {
    return Incompatible(
        "model differs: server has " + std::to_string(server.size()) +
        " parameters, worker has " + std::to_string(worker.size()));
  }
  return Status::Ok();
}

}  // namespace pstrain::ps
