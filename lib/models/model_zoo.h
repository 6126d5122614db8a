#pragma once
// The model zoo: builds a Model by name. Stateless; thread-safe except that
// MakeModel draws from torch's global generator.

#include <memory>
#include <string>
#include <vector>

#include "models/model.h"
#include "util/result.h"

namespace pstrain::models {

/// Builds the model named `name` ("net", "convnet", "mlp") on the CPU, in
/// train mode, with parameters drawn from torch's global generator (callers
/// seed it with torch::manual_seed first). Returns kInvalidArgument
/// "unknown model 'x'; expected one of: net, convnet, mlp" otherwise.
Result<std::shared_ptr<Model>> MakeModel(const std::string& name);

/// The names MakeModel accepts, default first: {"net", "convnet", "mlp"}.
std::vector<std::string> ModelNames();

}  // namespace pstrain::models
