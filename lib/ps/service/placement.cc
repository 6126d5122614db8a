#include "ps/service/placement.h"

#include <string>

#include <torch/torch.h>

#include "models/gpus.h"
#include "ps/engine/batch_desk.h"
#include "ps/engine/batch_runner.h"
#include "ps/job/job_data.h"
#include "ps/job/job_module.h"
#include "ps/job/job_rules.h"

namespace pstrain::ps {

Result<std::vector<torch::Device>> ServerDevices(int num_gpus) {
  std::vector<torch::Device> devices;
  if (num_gpus <= 0)
    return devices;
  PS_RETURN_IF_ERROR(
      models::RequireGpus("--num_gpus " + std::to_string(num_gpus), num_gpus));
  for (int i = 0; i < num_gpus; ++i)
    devices.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(i));
  return devices;
}

Result<BatchShapes> BatchShapesOf(const data::Source& test) {
  if (test.size() == 0)
    return InvalidArgument("--placement server: the test set is empty");
  const data::Batch one = test.Get(torch::zeros({1}, torch::kInt64), 0);
  BatchShapes shapes;
  shapes.x_sample.assign(one.images.sizes().begin() + 1,
                         one.images.sizes().end());
  shapes.y_sample.assign(one.labels.sizes().begin() + 1,
                         one.labels.sizes().end());
  shapes.y_float = one.labels.is_floating_point();
  return shapes;
}

Result<std::unique_ptr<BatchCompute>> StartBatchCompute(
    const JobSpec& spec, const std::vector<at::Tensor>& keys,
    const std::vector<torch::Device>& devices, const data::Source* test,
    Service* service) {
  if (!IsServerPlacement(spec))
    return std::unique_ptr<BatchCompute>();
  if (test == nullptr)
    return InvalidArgument("--placement server: the job has no test set");
  PS_ASSIGN_OR_RETURN(BatchShapes shapes, BatchShapesOf(*test));
  BatchComputeOptions options;
  options.replicas = spec.num_workers();
  options.devices = devices;
  options.loss = LossOf(spec);
  options.seed = spec.seed;
  PS_ASSIGN_OR_RETURN(
      std::unique_ptr<BatchCompute> compute,
      BatchCompute::Make(
          keys, [&spec] { return MakeJobModel(spec); }, options,
          [service](const BatchResult& r) { service->PostBatchDone(r); }));
  service->engine().batches().set_runner(compute.get(), std::move(shapes));
  return compute;
}

}  // namespace pstrain::ps
