#pragma once
// ScriptModel: a user's TorchScript module as a Model. Python writes it with
// torch.jit.script(model).save(PATH); torch::jit::load reads it here
// (libtorch's documented way to run a Python-defined model from C++). The
// module's own parameters and buffers are registered under their names in
// a tree of plain modules that mirrors its submodules, so ModelState,
// checkpoints and the wire see them in state_dict order as they see a
// built-in model's, and a checkpoint loads back into the Python module
// with load_state_dict(strict=True). Both trees share the tensors: what
// the wire writes into a parameter is what the module computes with.
// Not thread-safe, as any Model; two ScriptModels loaded from the same
// bytes share nothing.

#include <memory>
#include <string>

#include <torch/csrc/jit/api/module.h>

#include "models/model.h"
#include "util/result.h"

namespace pstrain::models {

class ScriptModel : public Model {
 public:
  /// Loads the TorchScript module in `bytes` (a file torch.jit.save wrote)
  /// onto the CPU. `name` names it in errors (the --model path). Every
  /// parameter is trained (requires_grad), and must be float32; buffers
  /// must be float32 or int64. Errors, kInvalidArgument with one line:
  /// "mlp.pt: not a TorchScript module (...): <libtorch's first line>",
  /// "mlp.pt: the module has no forward method", "mlp.pt: parameter
  /// 'fc.weight' is float64; expected float32 (call .float() before
  /// scripting)".
  static Result<std::shared_ptr<ScriptModel>> Load(const std::string& bytes,
                                                   const std::string& name);

  /// x: the batch as the data set gives it (float32 [B, ...]). Returns the
  /// module's output, whatever it computes (logits, log-probabilities,
  /// predictions: the job's --loss says how it is read). Throws c10::Error
  /// when the module fails on x, and std::runtime_error when its forward
  /// returns something other than one tensor.
  torch::Tensor forward(torch::Tensor x) override;

  /// Switches this tree and the TorchScript module (dropout, BatchNorm).
  void train(bool on = true) override;

 private:
  explicit ScriptModel(torch::jit::Module module);
  void InstrumentForward();

  torch::jit::Module module_;
  // Whether forward waits for each key where it reads it
  // (models/script_arrivals.h), rather than for all before it runs.
  bool per_key_ = false;
};

}  // namespace pstrain::models
