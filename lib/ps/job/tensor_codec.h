#pragma once
// Bridges libtorch tensors and wire descriptors: dtype mapping, descriptors
// for a tensor, and the check that an incoming descriptor fits the tensor it
// will be read into. Thread-compatible; no allocation.

#include <ATen/core/Tensor.h>

#include "util/result.h"
#include "util/status.h"
#include "wire/messages.h"
#include "wire/tensor_desc.h"

namespace torch::nn {
class Module;
}

namespace pstrain::ps {

/// kInvalidArgument for dtypes the wire does not carry (complex, bool, ...).
Result<wire::DType> ToWireDType(c10::ScalarType type);
/// REQUIRES: a valid wire::DType.
c10::ScalarType ToScalarType(wire::DType dtype);

/// The descriptor of `t` (contiguous, CPU) as key `key`: dtype, dims, nbytes.
/// REQUIRES: t is contiguous with a wire dtype and at most 8 dims.
wire::TensorDesc DescribeTensor(uint32_t key, const at::Tensor& t);

/// The descriptor of `nbytes` opaque bytes (uint8 [nbytes]) as key `key`:
/// how a shard carries a server's optimizer state.
wire::TensorDesc DescribeBytes(uint32_t key, uint64_t nbytes);

/// kCorruption unless `desc` names key `key` as uint8 of rank 1 (any length):
/// "shard: tensor 4 is float32 [3], expected uint8 [n]".
Status CheckBytesDesc(const wire::TensorDesc& desc, uint32_t key,
                      const char* what);

/// kCorruption unless `desc` names key `key` with exactly t's dtype and
/// shape, in `codec`: "push_pull: tensor 2 is key 2 float32 [64,32,3,3],
/// expected key 2 float32 [64,32,3]"; "push: tensor 1 is key 1 float32
/// [10] in fp16, expected key 1 float32 [10] in int8". A compressed record's
/// nbytes is checked against wire::CompressedBytes by the caller, which
/// knows the job's CodecParams.
Status CheckDescMatches(const wire::TensorDesc& desc, uint32_t key,
                        const at::Tensor& t, const char* what,
                        wire::Codec codec = wire::Codec::kRaw);

/// Model fingerprint entry for a parameter.
wire::KeySpec KeySpecOf(const std::string& name, const at::Tensor& t);

/// A model's fingerprint: KeySpecOf each tensor of models::ModelState (its
/// parameters and buffers, state_dict order; a tensor's index is its key).
std::vector<wire::KeySpec> Fingerprint(const torch::nn::Module& model);

/// "float32 [128,9216]".
std::string DescribeKeySpec(const wire::KeySpec& k);

/// Ok if equal; else kIncompatible naming the first differing key:
/// "model differs at key 2 'fc1.weight': server has float32 [128,9216],
/// worker has float32 [64,9216]" (also for a different key count).
Status CompareFingerprints(const std::vector<wire::KeySpec>& server,
                           const std::vector<wire::KeySpec>& worker);

}  // namespace pstrain::ps
