#pragma once
// TorchScript modules made in C++ (torch::jit::Module::define), for tests
// of --model PATH that need no Python: the bytes torch.jit.save writes.

#include <cstdint>
#include <string>

namespace pstrain::testing {

/// A module whose forward is `fc(x)`, fc a linear layer (fc.weight
/// [out, in], fc.bias [out], drawn from torch's global generator after
/// torch::manual_seed(seed)): x float32 [B, in] -> [B, out].
std::string ScriptLinearBytes(int64_t in, int64_t out, uint64_t seed = 1);

}  // namespace pstrain::testing
