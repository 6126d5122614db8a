#pragma once
// The model zoo: builds a Model by name. Stateless; thread-safe except that
// MakeModel draws from torch's global generator.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/lstm_lm.h"
#include "models/model.h"
#include "util/result.h"

namespace pstrain::models {

/// What a model is built for: images of `channels` x `image_size` x
/// `image_size` pixels in `num_classes` classes (data::Source::shape()).
struct InputShape {
  int64_t channels = 1;
  int64_t image_size = 28;
  int64_t num_classes = 10;
};

/// Builds the model named `name` (ModelNames()) for `input`, on the CPU, in
/// train mode, with parameters drawn from torch's global generator (callers
/// seed it with torch::manual_seed first). Returns kInvalidArgument
/// "unknown model 'x'; expected one of: net, convnet, ..." for another name,
/// and kInvalidArgument naming the model and the shape for an input it
/// cannot take (net, convnet and mlp take only 1x28x28 in 10 classes).
/// `lm`: what lstm_lm is built with (the others ignore it; lstm_lm ignores
/// `input`). Its bad options are kInvalidArgument too ("--tie_weights needs
/// --embed_dim equal to --hidden_dim ...").
Result<std::shared_ptr<Model>> MakeModel(const std::string& name,
                                         const InputShape& input = {},
                                         const LstmLmOptions& lm = {});

/// The names MakeModel accepts, default first: {"net", "convnet", "mlp",
/// "resnet18", "resnet34", "resnet50", "lstm_lm"}.
std::vector<std::string> ModelNames();

/// Whether `name` is one of ModelNames() (else, in a job, a TorchScript
/// file's path: models/script_model.h).
bool IsZooModel(const std::string& name);

}  // namespace pstrain::models
