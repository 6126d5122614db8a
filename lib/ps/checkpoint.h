#pragma once
// Checkpoints: a model's state_dict in the file format of torch.save (so
// Python's torch.load reads it as a dict of name to tensor), plus a small JSON
// file beside it with the job spec, version and step. Both are written
// atomically (temporary file, fsync, rename), so a reader never sees half a
// file. Thread-compatible.

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "util/result.h"
#include "util/status.h"

namespace pstrain::ps {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// The JSON file for a checkpoint: "model.pt" -> "model.json" (".pt" or
/// ".pth" replaced, otherwise ".json" appended).
std::string CheckpointMetaPath(const std::string& checkpoint_path);

/// Writes `tensors` (CPU, any dtype) to `path` and `meta` to its JSON file.
/// kIOError naming the path when a write or rename fails.
Status SaveCheckpoint(const std::string& path, const NamedTensors& tensors,
                      const nlohmann::json& meta);

/// Reads a checkpoint written by SaveCheckpoint or by torch.save of a dict
/// of str to tensor. kNotFound naming a missing file; kCorruption naming the
/// file for anything that is not such a dict.
Result<NamedTensors> LoadCheckpointTensors(const std::string& path);

/// Reads the JSON file beside `checkpoint_path`. kNotFound / kCorruption.
Result<nlohmann::json> LoadCheckpointMeta(const std::string& checkpoint_path);

/// Writes `bytes` to `path` atomically: `path`.tmp, fsync, rename.
Status WriteFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace pstrain::ps
