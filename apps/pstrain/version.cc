#include "apps/pstrain/version.h"

#include <torch/cuda.h>
#include <torch/version.h>

#include "wire/frame.h"

namespace pstrain::apps {

std::string VersionText() {
  return std::string("pstrain ") + PSTRAIN_VERSION + " (protocol " +
         std::to_string(wire::kWireVersion) + ")\nlibtorch " + TORCH_VERSION +
         ", CUDA available: " + (torch::cuda::is_available() ? "yes" : "no");
}

}  // namespace pstrain::apps
