#pragma once
// Checkpoints: a model's state_dict in the file format of torch.save (so
// Python's torch.load reads it as a dict of name to tensor), plus a small JSON
// file beside it with the job spec, version and step, and the optimizer's
// state (libtorch's own archive format, for `serve --resume`). All are
// written atomically (temporary file, fsync, rename), so a reader never sees
// half a file. Thread-compatible.

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "util/result.h"
#include "util/status.h"

namespace torch::optim {
class Optimizer;
}

namespace pstrain::ps {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// The JSON file for a checkpoint: "model.pt" -> "model.json" (".pt" or
/// ".pth" replaced, otherwise ".json" appended).
std::string CheckpointMetaPath(const std::string& checkpoint_path);

/// Writes `tensors` (CPU, any dtype) to `path` and `meta` to its JSON file.
/// kIOError naming the path when a write or rename fails.
Status SaveCheckpoint(const std::string& path, const NamedTensors& tensors,
                      const nlohmann::json& meta);

/// A whole checkpoint of a job whose num_servers is optimizer_states.size():
/// each server's optimizer state (SerializeOptimizerState bytes, server
/// order) at OptimizerStatePath(path, s, num_servers), then `tensors`, then
/// `meta` last, so that a checkpoint with its JSON file is complete.
/// kIOError naming the file that failed.
Status SaveJobCheckpoint(const std::string& path, const NamedTensors& tensors,
                         const std::vector<std::string>& optimizer_states,
                         const nlohmann::json& meta);

/// `tensors` plus, for each (alias, name) of `aliases`
/// (models::StateAliases), the tensor named `name` again under `alias`,
/// inserted after it: what PyTorch's state_dict holds for tied weights. An
/// alias whose name is not in `tensors` is left out.
NamedTensors WithAliases(
    NamedTensors tensors,
    const std::vector<std::pair<std::string, std::string>>& aliases);

/// Reads a checkpoint written by SaveCheckpoint or by torch.save of a dict
/// of str to tensor. kNotFound naming a missing file; kCorruption naming the
/// file for anything that is not such a dict.
Result<NamedTensors> LoadCheckpointTensors(const std::string& path);

/// Reads the JSON file beside `checkpoint_path`. kNotFound / kCorruption.
Result<nlohmann::json> LoadCheckpointMeta(const std::string& checkpoint_path);

/// The optimizer-state file for a checkpoint: "model.pt" -> "model.optim.pt"
/// (".pt" or ".pth" replaced, otherwise ".optim.pt" appended).
/// With several servers, each server's own: "model.optim-1-of-2.pt".
std::string OptimizerStatePath(const std::string& checkpoint_path,
                               int server = 0, int num_servers = 1);

/// The optimizers' state (momentum buffers, Adam moments and step counts,
/// param groups) in libtorch's serialization: one optimizer's archive as it
/// is, several (a server's groups of keys, --server_threads) as sub-archives
/// "group0", "group1", ... kIOError when libtorch cannot serialize it.
Result<std::string> SerializeOptimizerState(
    const std::vector<torch::optim::Optimizer*>& optimizers);

/// Writes SerializeOptimizerState(optimizers) to
/// OptimizerStatePath(checkpoint_path, server, num_servers). kIOError naming
/// the path.
Status SaveOptimizerState(
    const std::string& checkpoint_path,
    const std::vector<torch::optim::Optimizer*>& optimizers, int server = 0,
    int num_servers = 1);

/// Restores state written by SaveOptimizerState into `optimizers`, which
/// must be as many, of the same class, over parameters of the same count and
/// shapes. kNotFound naming a missing file; kCorruption naming the file
/// otherwise.
Status LoadOptimizerState(
    const std::string& checkpoint_path,
    const std::vector<torch::optim::Optimizer*>& optimizers, int server = 0,
    int num_servers = 1);

/// As LoadOptimizerState, from SerializeOptimizerState's `bytes` (a
/// standby's copy of its primary's state, ps/rank/standby.h). kCorruption
/// naming `source` when they are not these optimizers' state.
Status LoadOptimizerStateBytes(
    const std::string& bytes,
    const std::vector<torch::optim::Optimizer*>& optimizers,
    const std::string& source);

/// Copies `tensors` (a checkpoint read from `path`) into `named_params`, by
/// name, without recording gradients. kInvalidArgument naming `path` and the
/// parameter when one is missing or has another shape; extra tensors in
/// the checkpoint are ignored.
Status LoadIntoParameters(
    const NamedTensors& tensors,
    const std::vector<std::pair<std::string, at::Tensor>>& named_params,
    const std::string& path);

/// Writes `bytes` to `path` atomically: `path`.tmp, fsync, rename.
Status WriteFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace pstrain::ps
