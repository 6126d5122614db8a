#include "worker/trainer.h"

#include <torch/torch.h>

#include "data/dataset.h"
#include "data/sampler.h"
#include "models/model_zoo.h"
#include "ps/tensor_codec.h"
#include "worker/ps_client.h"

namespace pstrain::worker {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

Result<torch::Device> ParseDevice(const std::string& device) {
  if (device == "cpu") return torch::Device(torch::kCPU);
  if (device == "cuda") {
    if (!torch::cuda::is_available()) {
      return InvalidArgument(
          "--device cuda: this libtorch has no CUDA or sees no GPU");
    }
    return torch::Device(torch::kCUDA);
  }
  return InvalidArgument("--device '" + device + "': expected cpu or cuda");
}

// Host-side tensors the wire reads into and writes from. On the CPU they
// are the model's own parameters and gradients (no copy at all).
struct HostMirror {
  std::vector<at::Tensor> params, grads;
  std::vector<at::Tensor> model_params;
  bool on_cpu = true;

  explicit HostMirror(models::Model& model) {
    for (auto& p : model.parameters()) {
      model_params.push_back(p);
      on_cpu = on_cpu && p.device().is_cpu();
      // Gradients must exist before the first push; zeros keep shape/dtype.
      p.mutable_grad() = torch::zeros_like(p);
      params.push_back(on_cpu ? p : torch::empty(p.sizes(), p.options().device(torch::kCPU)));
      grads.push_back(on_cpu ? p.mutable_grad()
                             : torch::empty(p.sizes(), p.options().device(torch::kCPU)));
    }
  }
  void ParamsToModel() {
    if (on_cpu) return;
    torch::NoGradGuard no_grad;
    for (size_t k = 0; k < params.size(); ++k) model_params[k].copy_(params[k]);
  }
  void GradsToHost() {
    if (on_cpu) return;
    for (size_t k = 0; k < grads.size(); ++k) grads[k].copy_(model_params[k].grad());
  }
};

struct Progress {
  int64_t steps = 0;
  int64_t samples = 0;
  double compute = 0;
  double communication = 0;
  Clock::time_point start = Clock::now();
};

std::vector<wire::KeySpec> Fingerprint(models::Model& model) {
  std::vector<wire::KeySpec> keys;
  for (const auto& item : model.named_parameters()) {
    keys.push_back(ps::KeySpecOf(item.key(), item.value()));
  }
  return keys;
}

Result<data::Dataset> LoadTrainSet(const ps::JobSpec& spec,
                                   const std::string& data_dir) {
  std::string dir = data_dir.empty() ? data::DefaultDataDir(spec.dataset) : data_dir;
  auto ds = data::LoadDataset(spec.dataset, dir, data::Split::kTrain);
  // Bad data files are bad input (exit 2), whatever the reason.
  if (!ds.ok() && ds.status().code() == StatusCode::kCorruption) {
    return InvalidArgument(ds.status().message());
  }
  return ds;
}

}  // namespace

Status RunWorker(const TrainerOptions& options, report::EventLog* log) {
  PS_ASSIGN_OR_RETURN(torch::Device device, ParseDevice(options.device));
  PsClient client(options.timeout, net::ConnectionOptions{options.max_frame_bytes});
  PS_RETURN_IF_ERROR(client.Connect(options.master_addr, options.master_port));
  PS_ASSIGN_OR_RETURN(ps::JobSpec spec,
                      client.Handshake(options.rank, options.world_size));
  torch::manual_seed(spec.seed);
  const std::string model_name =
      options.model_override.empty() ? spec.model : options.model_override;
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model,
                      models::MakeModel(model_name));
  // Check our own input before joining, so that bad input ends this worker
  // alone and does not look like a worker lost mid-job.
  PS_ASSIGN_OR_RETURN(data::Dataset train, LoadTrainSet(spec, options.data_dir));
  if (spec.batch_size * spec.num_workers() > train.size()) {
    return InvalidArgument("--batch_size " + std::to_string(spec.batch_size) +
                           " x " + std::to_string(spec.num_workers()) +
                           " workers exceeds the " + std::to_string(train.size()) +
                           " training samples");
  }
  PS_RETURN_IF_ERROR(client.Register(Fingerprint(*model)));
  model->to(device);
  HostMirror mirror(*model);
  client.Attach(mirror.params, mirror.grads);

  const int worker_index = options.rank - spec.num_servers;
  data::ShardSampler sampler(train.size(), spec.num_workers(), worker_index,
                             spec.batch_size, spec.seed);
  int64_t total_steps = spec.epochs * sampler.steps_per_epoch();
  if (spec.max_steps > 0) total_steps = std::min(total_steps, spec.max_steps);
  // Dropout draws differ per worker but repeat from run to run.
  torch::manual_seed(spec.seed * 1000 + options.rank);

  PS_ASSIGN_OR_RETURN(uint64_t version, client.Pull(0));
  mirror.ParamsToModel();
  Progress progress;
  model->train();
  for (int64_t epoch = 0; progress.steps < total_steps; ++epoch) {
    double loss_sum = 0;
    int64_t epoch_steps = 0;
    for (int64_t step = 0;
         step < sampler.steps_per_epoch() && progress.steps < total_steps; ++step) {
      auto t0 = Clock::now();
      data::Batch batch = data::GetBatch(train, sampler.BatchIndices(epoch, step));
      model->zero_grad(/*set_to_none=*/false);
      auto loss = torch::nll_loss(model->forward(batch.images.to(device)),
                                  batch.labels.to(device));
      loss.backward();
      mirror.GradsToHost();
      double loss_value = loss.item<double>();
      auto t1 = Clock::now();
      PS_ASSIGN_OR_RETURN(version, client.PushPull(version));
      mirror.ParamsToModel();
      auto t2 = Clock::now();
      progress.compute += Seconds(t1 - t0);
      progress.communication += Seconds(t2 - t1);
      progress.samples += spec.batch_size;
      ++progress.steps;
      loss_sum += loss_value;
      ++epoch_steps;
      if (progress.steps % spec.log_interval == 0 || progress.steps == total_steps) {
        double wall = Seconds(Clock::now() - progress.start);
        log->Emit("step", {{"epoch", epoch + 1},
                           {"step", progress.steps},
                           {"total_steps", total_steps},
                           {"loss", loss_value},
                           {"version", version},
                           {"samples_per_second", progress.samples / wall}});
      }
    }
    log->Emit("epoch", {{"epoch", epoch + 1},
                        {"steps", epoch_steps},
                        {"loss", loss_sum / std::max<int64_t>(1, epoch_steps)}});
  }
  double wall = Seconds(Clock::now() - progress.start);
  nlohmann::json stats = {{"steps", progress.steps},
                          {"samples", progress.samples},
                          {"wall_seconds", wall},
                          {"samples_per_second", progress.samples / wall},
                          {"compute_seconds", progress.compute},
                          {"communication_seconds", progress.communication},
                          {"bytes_pushed", client.bytes_pushed()},
                          {"bytes_pulled", client.bytes_pulled()},
                          {"version", version}};
  PS_RETURN_IF_ERROR(client.Done(stats));
  log->Emit("summary", stats);
  return Status::Ok();
}

}  // namespace pstrain::worker
