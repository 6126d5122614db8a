#pragma once
// Where the job's model runs on the server: --placement (the workers'
// batches on the server's model, ps/service/batch_compute.h) and --num_gpus
// (the devices of the server's model). Free functions; thread-safe.

#include <memory>
#include <vector>

#include <torch/types.h>

#include "data/source.h"
#include "models/loss.h"
#include "ps/engine/batch_runner.h"
#include "ps/job/job_spec.h"
#include "ps/service/batch_compute.h"
#include "ps/service/service.h"
#include "util/result.h"

namespace pstrain::ps {

/// Whether workers send batches and the server trains (--placement
/// server), rather than workers pushing gradients.
/// The devices --num_gpus names: none (the CPU) for 0, {cuda:0} for 1,
/// {cuda:0, cuda:1} for 2. kInvalidArgument with the count libtorch sees
/// when there are fewer (models::RequireGpus): "--num_gpus 2: this machine
/// has 1 CUDA GPU", or "--num_gpus 1: this libtorch has no CUDA, or no GPU
/// is visible (it sees 0 GPUs)".
Result<std::vector<torch::Device>> ServerDevices(int num_gpus);

/// What a batch must look like for the model (BatchShapes), from the first
/// sample of `test` (rank 0's test set). kInvalidArgument for an empty set.
Result<BatchShapes> BatchShapesOf(const data::Source& test);

/// Rank 0 under --placement server: a BatchCompute with a replica of the
/// job's model per worker over `keys` (the server's, ModelState order), on
/// `devices`, whose results `*service` applies; it takes batches shaped as
/// `test`'s samples. Null under --placement worker. The result must be
/// destroyed before `*service`. Errors: BatchShapesOf's, MakeJobModel's.
Result<std::unique_ptr<BatchCompute>> StartBatchCompute(
    const JobSpec& spec, const std::vector<at::Tensor>& keys,
    const std::vector<torch::Device>& devices, const data::Source* test,
    Service* service);

}  // namespace pstrain::ps
