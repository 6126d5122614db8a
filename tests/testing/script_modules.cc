#include "testing/script_modules.h"

#include <sstream>

#include <torch/csrc/jit/api/module.h>
#include <torch/torch.h>

namespace pstrain::testing {

std::string ScriptLinearBytes(int64_t in, int64_t out, uint64_t seed) {
  torch::manual_seed(seed);
  torch::jit::Module fc("Fc");
  fc.register_attribute("training", c10::BoolType::get(), true);
  fc.register_parameter("weight", torch::randn({out, in}) * 0.1, false);
  fc.register_parameter("bias", torch::zeros({out}), false);
  fc.define(R"(
def forward(self, x):
    return torch.addmm(self.bias, x, self.weight.t())
)");
  torch::jit::Module m("Linear");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_module("fc", fc);
  m.define("def forward(self, x):\n    return self.fc.forward(x)\n");
  std::ostringstream bytes;
  m.save(bytes);
  return bytes.str();
}

}  // namespace pstrain::testing
