#pragma once
// The job's TorchScript module (--model PATH): which jobs have one, how
// rank 0 reads it and a process checks its own copy, how outputs are
// scored (--loss), and the check of the module against the data before
// training. The bytes travel at the handshake (wire::GetModule); see
// models/script_model.h for the model itself. Free functions; thread-safe.

#include <exception>
#include <string>

#include "data/source.h"
#include "models/loss.h"
#include "models/model.h"
#include "ps/job/job_spec.h"
#include "util/status.h"

namespace pstrain::ps {

/// Whether the job trains a TorchScript module (--model PATH) rather than
/// a built-in model (models::IsZooModel).
bool IsScriptJob(const JobSpec& spec);

/// How the job scores outputs: --loss for a TorchScript module; nll for a
/// built-in model, whose output is log-probabilities.
models::Loss LossOf(const JobSpec& spec);

/// Rank 0: reads the TorchScript file that --model names into
/// spec->module, and its SHA-256 (Sha256Hex) into spec->model_sha256;
/// nothing for a built-in model. kInvalidArgument "--model 'x': neither a
/// built-in model (net, convnet, ...) nor a file" for a path that is not
/// there, kIOError for one that cannot be read.
Status ReadModuleFile(JobSpec* spec);

/// A worker given --model `path` of its own, beside the job rank 0 sent:
/// Ok when the file's SHA-256 is spec->model_sha256, and then the bytes
/// are spec->module (nothing needs fetching), or when `path` is the
/// built-in model the job trains. kIncompatible naming both hashes when
/// they differ, or naming rank 0's model when the kinds differ; errors as
/// ReadModuleFile for a path that is not a file.
Status UseOwnModuleFile(const std::string& path, JobSpec* spec);

/// A TorchScript job's model against its data before training: one
/// forward of `model` on the first two samples of `source` (or one), and
/// LossOf(spec)'s models::CheckTarget on the output. `data` names the data
/// in errors ("DIR/train.pt"). kInvalidArgument, one line: "--model
/// mlp.pt: forward on DIR/test.pt's x [2, 7] failed: <libtorch's first
/// line>" (of the TorchScript interpreter's error, its last: "RuntimeError:
/// mat1 and mat2 shapes cannot be multiplied (2x7 and 20x32)"), or
/// "DIR/test.pt: --loss mse needs ...". Leaves the model in
/// train mode. Nothing for a built-in model or an empty source.
Status CheckModelOnData(const JobSpec& spec, models::Model& model,
                        const data::Source& source, const std::string& data);

/// libtorch's own line for an error thrown by a model's forward or backward:
/// the first line of its message (a c10::Error's without its backtrace),
/// but of the TorchScript interpreter's, whose first line only says that an
/// operation failed, the last, which says which and why ("RuntimeError:
/// mat1 and mat2 shapes cannot be multiplied (2x7 and 20x32)").
std::string ErrorLine(const std::exception& e);

/// What CheckModelOnData calls the job's split in `data_dir`:
/// "DIR/train.pt" for --dataset tensors, else "the training set of
/// fashion-mnist" (kTest: "the test set ...").
std::string DataName(const JobSpec& spec, const std::string& data_dir,
                     data::Split split);

}  // namespace pstrain::ps
