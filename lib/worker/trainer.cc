#include "worker/trainer.h"

#include <thread>

#include <torch/torch.h>

#include "data/dataset.h"
#include "data/sampler.h"
#include "models/model_zoo.h"
#include "ps/tensor_codec.h"
#include "util/resources.h"
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

Result<data::Dataset> LoadTrainSet(const ps::JobSpec& spec,
                                   const std::string& data_dir) {
  auto ds = data::LoadDataset(spec.dataset, data_dir, data::Split::kTrain);
  // Bad data files are bad input (exit 2), whatever the reason.
  if (!ds.ok() && ds.status().code() == StatusCode::kCorruption) {
    return InvalidArgument(ds.status().message());
  }
  return ds;
}

// One worker's run, in the order it happens: join, train, report.
class Trainer {
 public:
  Trainer(const TrainerOptions& options, report::EventLog* log)
      : options_(options),
        log_(log),
        client_(options.timeout, net::ConnectionOptions{options.max_frame_bytes}) {
    client_.set_auth_token(options.auth_token);
  }

  Status Join();
  Status Train();
  Status Finish();

 private:
  Status Step(int64_t epoch, int64_t step, double* loss);
  void LogStep(int64_t epoch, double loss);

  const TrainerOptions& options_;
  report::EventLog* log_;
  PsClient client_;
  ps::JobSpec spec_;
  std::shared_ptr<models::Model> model_;
  torch::Device device_{torch::kCPU};
  data::Dataset train_;
  std::unique_ptr<HostMirror> mirror_;
  std::unique_ptr<data::ShardSampler> sampler_;
  int64_t total_steps_ = 0;
  uint64_t version_ = 0;
  Progress progress_;
};

Status Trainer::Join() {
  PS_ASSIGN_OR_RETURN(device_, ParseDevice(options_.device));
  PS_RETURN_IF_ERROR(client_.Connect(options_.master_addr, options_.master_port));
  PS_ASSIGN_OR_RETURN(spec_, client_.Handshake(options_.rank, options_.world_size));
  torch::manual_seed(spec_.seed);
  PS_ASSIGN_OR_RETURN(model_, models::MakeModel(options_.model_override.empty()
                                                    ? spec_.model
                                                    : options_.model_override));
  // Check our own input before joining, so that bad input ends this worker
  // alone and does not look like a worker lost mid-job.
  PS_ASSIGN_OR_RETURN(train_, LoadTrainSet(spec_, options_.data_dir));
  if (spec_.batch_size * spec_.num_workers() > train_.size()) {
    return InvalidArgument("--batch_size " + std::to_string(spec_.batch_size) +
                           " x " + std::to_string(spec_.num_workers()) +
                           " workers exceeds the " + std::to_string(train_.size()) +
                           " training samples");
  }
  PS_RETURN_IF_ERROR(client_.Register(ps::Fingerprint(*model_)));
  model_->to(device_);
  mirror_ = std::make_unique<HostMirror>(*model_);
  client_.Attach(mirror_->params, mirror_->grads);
  sampler_ = std::make_unique<data::ShardSampler>(
      train_.size(), spec_.num_workers(), options_.rank - spec_.num_servers,
      spec_.batch_size, spec_.seed);
  total_steps_ = spec_.epochs * sampler_->steps_per_epoch();
  if (spec_.max_steps > 0) total_steps_ = std::min(total_steps_, spec_.max_steps);
  return Status::Ok();
}

Status Trainer::Train() {
  // Dropout draws differ per worker but repeat from run to run.
  torch::manual_seed(spec_.seed * 1000 + options_.rank);
  PS_ASSIGN_OR_RETURN(version_, client_.Pull(0));
  mirror_->ParamsToModel();
  progress_ = Progress{};
  // Sync: version v means v global steps are done (a resumed server starts
  // past 0), so this worker runs steps v .. total_steps - 1 on the batches an
  // uninterrupted run would see there. Async and ssp versions count every
  // push of every worker, not steps, so there workers start at step 0.
  int64_t first_epoch = 0, first_step = 0;
  if (spec_.mode == ps::Mode::kSync && version_ > 0) {
    const int64_t done =
        std::min<int64_t>(static_cast<int64_t>(version_), total_steps_);
    progress_.steps = done;
    first_epoch = done / sampler_->steps_per_epoch();
    first_step = done % sampler_->steps_per_epoch();
  }
  model_->train();
  for (int64_t epoch = first_epoch; progress_.steps < total_steps_; ++epoch) {
    double loss_sum = 0;
    int64_t steps = epoch == first_epoch ? first_step : 0;
    const int64_t epoch_start = steps;
    for (; steps < sampler_->steps_per_epoch() && progress_.steps < total_steps_;
         ++steps) {
      double loss = 0;
      PS_RETURN_IF_ERROR(Step(epoch, steps, &loss));
      loss_sum += loss;
      if (progress_.steps % spec_.log_interval == 0 ||
          progress_.steps == total_steps_) {
        LogStep(epoch, loss);
      }
    }
    log_->Emit("epoch", {{"epoch", epoch + 1},
                         {"steps", steps - epoch_start},
                         {"loss", loss_sum / std::max<int64_t>(1, steps - epoch_start)}});
  }
  return Status::Ok();
}

// Forward and backward on this worker's batch, then one push-pull.
Status Trainer::Step(int64_t epoch, int64_t step, double* loss) {
  auto t0 = Clock::now();
  if (options_.step_delay.count() > 0) std::this_thread::sleep_for(options_.step_delay);
  data::Batch batch = data::GetBatch(train_, sampler_->BatchIndices(epoch, step));
  model_->zero_grad(/*set_to_none=*/false);
  auto out = model_->forward(batch.images.to(device_));
  auto nll = torch::nll_loss(out, batch.labels.to(device_));
  nll.backward();
  mirror_->GradsToHost();
  *loss = nll.item<double>();
  auto t1 = Clock::now();
  PS_ASSIGN_OR_RETURN(version_, client_.PushPull(version_));
  mirror_->ParamsToModel();
  auto t2 = Clock::now();
  progress_.compute += Seconds(t1 - t0);
  progress_.communication += Seconds(t2 - t1);
  progress_.samples += spec_.batch_size;
  ++progress_.steps;
  return Status::Ok();
}

void Trainer::LogStep(int64_t epoch, double loss) {
  double wall = Seconds(Clock::now() - progress_.start);
  log_->Emit("step", {{"epoch", epoch + 1},
                      {"step", progress_.steps},
                      {"total_steps", total_steps_},
                      {"loss", loss},
                      {"version", version_},
                      {"samples_per_second", progress_.samples / wall}});
}

Status Trainer::Finish() {
  double wall = Seconds(Clock::now() - progress_.start);
  nlohmann::json stats = {{"steps", progress_.steps},
                          {"samples", progress_.samples},
                          {"wall_seconds", wall},
                          {"samples_per_second", progress_.samples / wall},
                          {"compute_seconds", progress_.compute},
                          {"communication_seconds", progress_.communication},
                          {"bytes_pushed", client_.bytes_pushed()},
                          {"bytes_pulled", client_.bytes_pulled()},
                          {"version", version_},
                          {"peak_rss_bytes", PeakRssBytes()}};
  PS_RETURN_IF_ERROR(client_.Done(stats));
  log_->Emit("summary", stats);
  return Status::Ok();
}

}  // namespace

Status RunWorker(const TrainerOptions& options, report::EventLog* log) {
  Trainer trainer(options, log);
  PS_RETURN_IF_ERROR(trainer.Join());
  PS_RETURN_IF_ERROR(trainer.Train());
  return trainer.Finish();
}

}  // namespace pstrain::worker
