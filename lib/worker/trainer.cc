#include "worker/trainer.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <utility>

#include <torch/torch.h>

#include "models/language_model.h"
#include "models/loss.h"
#include "models/model_zoo.h"
#include "ps/job/job_data.h"
#include "ps/job/job_id.h"
#include "ps/job/job_module.h"
#include "ps/job/job_rules.h"
#include "ps/job/rule_traits.h"
#include "ps/job/run_length.h"
#include "ps/job/sparse_keys.h"
#include "ps/job/tensor_codec.h"
#include "report/worker_stats.h"
#include "worker/batch_rows.h"
#include "worker/device.h"
#include "worker/device_copies.h"
#include "worker/grad_stream.h"
#include "worker/host_mirror.h"
#include "worker/image_batches.h"
#include "worker/lm_stream.h"
#include "worker/progress.h"
#include "worker/random_state.h"
#include "worker/server_group.h"
#include "worker/step_log.h"

namespace pstrain::worker {

namespace {

using Exchange = ServerGroup::Exchange;

// One worker's run, in the order it happens: join, train, report.
class Trainer {
 public:
  Trainer(const TrainerOptions& options, report::EventLog* log)
      : options_(options),
        log_(log),
        servers_(options, log),
        step_log_(log, options.metrics) {}

  Status Join();
  Status Train();
  Status Finish();

 private:
  Status OpenImages();
  Status OpenText();
  Status Step(int64_t epoch, int64_t step, double* loss, bool* done);
  Status PlacedStep(const data::Batch& batch, Clock::time_point t0,
                    double* loss, bool* done);
  torch::Tensor Forward(int64_t step, const data::Batch& batch,
                        int64_t* samples, int64_t* skipped);
  void Meter(double step_seconds, double loss);
  int64_t NextStep() const;
  void Backward(torch::Tensor& loss);
  void AwaitKeys(size_t n);
  // Row-sparse keys (--sparse_embeddings).
  Status TakeBatch(int64_t global, data::Batch* batch);

  const TrainerOptions& options_;
  report::EventLog* log_;
  ps::JobSpec spec_;
  std::shared_ptr<models::Model> model_;
  models::Loss loss_ = models::Loss::kNll;
  torch::Device device_{torch::kCPU};
  std::unique_ptr<HostMirror> mirror_;
  std::unique_ptr<GradStream> stream_;
  std::unique_ptr<DeviceCopies> copies_;  // a model on a GPU
  size_t uploaded_ = 0;  // GPU: keys [0, uploaded_) of the reply went up
  RandomState random_;   // before this step's forward
  // Borrows model_, mirror_, stream_: declared after them, to go first.
  ServerGroup servers_;
  std::exception_ptr backward_error_;
  std::unique_ptr<ImageBatches> images_;  // or, --dataset text:
  // --dataset text: this worker's BPTT windows, and the model as a
  // LanguageModel (model_ itself).
  std::unique_ptr<LmStream> lm_;
  models::LanguageModel* lm_model_ = nullptr;
  int64_t per_epoch_ = 0;  // steps in an epoch
  int64_t total_steps_ = 0;
  bool stopped_ = false;  // rank 0 said the job stops (--target_accuracy)
  bool placed_ = false;   // --placement server: batches go to the server
  Progress progress_;
  std::unique_ptr<BatchRows> rows_;  // the row-sparse keys' batch ids
  StepLog step_log_;
};

// Backward, with each gradient released to the pushes as it is final. An
// error in backward ends the pushes unsent and is rethrown once they stop.
void Trainer::Backward(torch::Tensor& loss) {
  trace::Scope span(options_.timeline, servers_.SpanOf("backward"));
  try {
    loss.backward();
    if (!rows_->empty()) {
      stream_->Drain();       // they gather from the host's gradients
      servers_.GatherRows();  // before the gate opens: they leave last
    }
  } catch (...) {
    backward_error_ = std::current_exception();
    stream_->Abort();
    return;
  }
  if (stream_->End())
    servers_.Reorder();
}

Status Trainer::Join() {
  PS_ASSIGN_OR_RETURN(device_, ParseDevice(options_.device));
  PS_ASSIGN_OR_RETURN(spec_, servers_.JoinMaster());
  if (options_.metrics)
    options_.metrics->SetLabel("job", ps::JobId(spec_));
  torch::manual_seed(spec_.seed);
  PS_ASSIGN_OR_RETURN(model_, options_.make_model
                                  ? options_.make_model(spec_.model)
                                  : ps::MakeJobModel(spec_));
  // Check our own input before joining, so that bad input ends this worker
  // alone and does not look like a worker lost mid-job.
  PS_RETURN_IF_ERROR(ps::IsTextJob(spec_) ? OpenText() : OpenImages());
  if (images_) {
    PS_RETURN_IF_ERROR(ps::CheckModelOnData(
        spec_, *model_, images_->source(),
        ps::DataName(spec_, options_.data_dir, data::Split::kTrain)));
  }
  loss_ = ps::LossOf(spec_);
  PS_RETURN_IF_ERROR(servers_.JoinServers(ps::Fingerprint(*model_)));
  total_steps_ = ps::StepsPerWorker(spec_, per_epoch_);
  // --placement server: batches go to the server's model; ours only
  // checked the data and named the keys.
  if ((placed_ = ps::IsServerPlacement(spec_))) {
    rows_ = std::make_unique<BatchRows>(std::vector<bool>(), nullptr);
    return Status::Ok();
  }
  model_->to(device_);
  mirror_ = std::make_unique<HostMirror>(*model_);
  stream_ = std::make_unique<GradStream>(mirror_->model_params(), true);
  if (!mirror_->on_cpu()) {
    copies_ = std::make_unique<DeviceCopies>(
        mirror_->model_params(), mirror_->is_buffer(), mirror_->params(),
        mirror_->grads(), [s = stream_.get()](int key) { s->OnCopied(key); });
    stream_->SetCopies(copies_.get());
  }
  servers_.Attach(mirror_.get(), stream_.get());
  const std::vector<bool> sparse = ps::RowSparseKeys(spec_, *model_);
  rows_ = std::make_unique<BatchRows>(sparse, options_.batch_ids);
  servers_.SetRowSparse(sparse);  // none: a no-op
  model_->set_await([this](size_t n) { AwaitKeys(n); });
  return Status::Ok();
}

// Forward waits for keys [0, n) of the reply in flight; on a GPU each goes
// up as it arrives, queued before the kernels that read it.
void Trainer::AwaitKeys(size_t n) {
  servers_.arrivals().WaitKeys(n);
  for (; copies_ && uploaded_ < n; ++uploaded_)
    copies_->CopyIn(static_cast<int>(uploaded_));
}

Status Trainer::OpenImages() {
  PS_ASSIGN_OR_RETURN(
      images_, ImageBatches::Open(spec_, options_.data_dir,
                                  options_.rank - spec_.num_servers, log_));
  per_epoch_ = images_->steps_per_epoch();
  return Status::Ok();
}

Status Trainer::OpenText() {
  lm_model_ = dynamic_cast<models::LanguageModel*>(model_.get());
  if (lm_model_ == nullptr)
    return InvalidArgument("--model " + spec_.model + ": not a text model");
  PS_ASSIGN_OR_RETURN(lm_,
                      OpenWorkerLmStream(spec_, options_.data_dir,
                                         options_.rank - spec_.num_servers));
  per_epoch_ = lm_->steps_per_epoch();
  return Status::Ok();
}

// The global step this worker computes next. Where a version is a step of
// all workers (sync), version v means v global steps are done (a resumed
// server starts past 0; a straggler whose push was dropped,
// --backup_workers, jumps ahead), so the worker computes step v on the
// batch an uninterrupted run sees there. Where each push makes a version
// (async, ssp), versions count every push of every worker, so the worker
// counts its own steps.
int64_t Trainer::NextStep() const {
  return ps::RuleTraitsOf(spec_).applies_each_push
             ? progress_.steps
             : static_cast<int64_t>(servers_.version());
}

Status Trainer::Train() {
  // Dropout draws differ per worker but repeat from run to run.
  torch::manual_seed(spec_.seed * 1000 + options_.rank);
  servers_.StartHeartbeats();
  if (!placed_) {
    PS_RETURN_IF_ERROR(servers_.ExchangeAll(Exchange::kPull));
    mirror_->ParamsToModel();
  }
  progress_ = Progress{};
  model_->train();
  const int64_t per_epoch = per_epoch_;
  int64_t epoch = -1, epoch_steps = 0;
  double loss_sum = 0;
  for (;;) {
    const int64_t step = NextStep();
    if (!stopped_ && servers_.master().stop_requested()) {
      stopped_ = true;
      log_->Info("rank 0 stopped the job at version " +
                 std::to_string(servers_.version()) + " (its target reached)");
    }
    if (step >= total_steps_ || stopped_) {
      // The last replies in full; a server lost meanwhile may set us back.
      Status last = servers_.Finish();
      if (last.ok())
        break;
      PS_RETURN_IF_ERROR(servers_.Reconnect(last));
      continue;
    }
    if (step / per_epoch != epoch) {
      if (epoch >= 0)
        step_log_.Epoch(epoch, epoch_steps, loss_sum);
      epoch = step / per_epoch;
      epoch_steps = 0;
      loss_sum = 0;
    }
    double loss = 0;
    bool done = false;
    PS_RETURN_IF_ERROR(Step(epoch, step % per_epoch, &loss, &done));
    if (!done)
      continue;  // reconnected: the step to compute may differ
    loss_sum += loss;
    ++epoch_steps;
    servers_.PublishProgress(progress_, loss);
    if (progress_.steps % spec_.log_interval == 0 ||
        NextStep() >= total_steps_) {
      step_log_.Step({epoch, std::min(NextStep(), total_steps_), total_steps_,
                      servers_.version()},
                     loss, progress_);
    }
  }
  if (epoch >= 0)
    step_log_.Epoch(epoch, epoch_steps, loss_sum);
  servers_.StopHeartbeats();
  return Status::Ok();
}

// Forward and backward on this worker's batch, then one push-pull: the
// push leaves during backward, and the step ends once the reply's version
// is known; its parameters arrive during the next forward, which waits for
// each layer's (Model::Await). *done is false when a lost server was
// rejoined before this step's push: the step to compute is the next
// NextStep().
Status Trainer::Step(int64_t epoch, int64_t step, double* loss, bool* done) {
  const auto t0 = Clock::now();
  if (options_.before_step)
    options_.before_step();
  data::Batch batch;
  servers_.set_step(epoch * per_epoch_ + step);
  Status taken = TakeBatch(epoch * per_epoch_ + step, &batch);
  if (!taken.ok())
    return servers_.Reconnect(taken);  // ok: the next NextStep() is redone
  if (placed_)
    return PlacedStep(batch, t0, loss, done);
  int64_t samples = 0, skipped = 0;
  if (spec_.replicas > 1)
    random_.Keep();  // a takeover may make us compute this step again
  auto nll = Forward(step, batch, &samples, &skipped);
  const auto t_wait = Clock::now();
  Status last = servers_.Finish();
  double communication = Seconds(Clock::now() - t_wait);
  if (!last.ok()) {
    // Forward may have read parameters that never came: start again from
    // the server's.
    PS_RETURN_IF_ERROR(servers_.Reconnect(last));
    if (servers_.resent())
      random_.Restore();
    return Status::Ok();
  }
  AwaitKeys(mirror_->params().size());  // those forward did not read
  // Only now has the last push left whole: a server stepping keys ahead
  // (ps/rules/step_order.h) replies while the gradients are still being sent.
  model_->zero_grad(/*set_to_none=*/false);
  uploaded_ = 0;     // the next reply's are next
  stream_->Begin();  // before the pushes start, which wait on it
  servers_.Start(Exchange::kPushPull);
  Backward(nll);
  if (backward_error_) {
    (void)servers_.Finish();
    std::rethrow_exception(std::exchange(backward_error_, nullptr));
  }
  *loss = nll.item<double>();
  const bool replied = servers_.arrivals().WaitMeta();
  if (replied)
    servers_.NoteMasterReply();
  if (!replied) {
    const auto t_finish = Clock::now();
    Status s = servers_.Finish();
    communication += Seconds(Clock::now() - t_finish);
    // A lost connection loses this step's gradients; the next step starts
    // from the server's parameters.
    if (!s.ok())
      PS_RETURN_IF_ERROR(servers_.Reconnect(s));
    mirror_->ParamsToModel();
  }
  const double wall = Seconds(Clock::now() - t0);
  communication += servers_.arrivals().TakeWaitedSeconds();
  progress_.compute += wall - communication;
  progress_.communication += communication;
  progress_.samples += samples;
  progress_.skipped += skipped;
  ++progress_.steps;
  Meter(wall, *loss);
  *done = true;
  return Status::Ok();
}

// --placement server: the batch goes to rank 0, whose model runs it; the
// worker waits for the step it is part of, which is all communication. A
// batch whose connection was lost is lost with it: once rank 0 is back,
// the next NextStep() is computed.
Status Trainer::PlacedStep(const data::Batch& batch, Clock::time_point t0,
                           double* loss, bool* done) {
  Status pushed = servers_.PushBatch(batch, loss);
  if (!pushed.ok())
    return servers_.Reconnect(pushed);
  progress_.communication += Seconds(Clock::now() - t0);
  progress_.samples += batch.labels.size(0);
  progress_.skipped += batch.skipped;
  ++progress_.steps;
  Meter(Seconds(Clock::now() - t0), *loss);
  *done = true;
  return Status::Ok();
}

// The loss on this worker's batch (text: window; samples: target tokens).
torch::Tensor Trainer::Forward(int64_t step, const data::Batch& batch,
                               int64_t* samples, int64_t* skipped) {
  trace::Scope span(options_.timeline, servers_.SpanOf("forward"));
  if (lm_)
    return lm_->Loss(*lm_model_, step, device_, samples);
  auto out = model_->forward(batch.images.to(device_));
  *samples = batch.labels.size(0);
  *skipped = batch.skipped;
  return models::ComputeLoss(loss_, out, batch.labels.to(device_));
}

void Trainer::Meter(double step_seconds, double loss) {
  step_log_.Meter(progress_, step_seconds, loss, servers_.version(),
                  servers_.bytes_pushed(), servers_.bytes_pulled());
}

Status Trainer::Finish() {
  report::WorkerStats stats = StatsOf(progress_);
  stats.bytes_pushed = servers_.bytes_pushed();
  stats.bytes_pulled = servers_.bytes_pulled();
  stats.version = servers_.version();
  stats.reconnects = servers_.reconnects();
  stats.stopped_early = stopped_;
  if (mirror_) {
    rows_->Stats(servers_.rows_pushed(), servers_.rows_pulled(),
                 progress_.steps, mirror_->grads(), &stats);
  }
  PS_RETURN_IF_ERROR(servers_.Done(stats));
  log_->Emit("summary", report::ToJson(stats));
  return Status::Ok();
}

// The batch of global step `global`, and its rows (ServerGroup::PlanRows).
// A text job's batch is its window's input: the ids it looks up.
Status Trainer::TakeBatch(int64_t global, data::Batch* batch) {
  trace::Scope span(options_.timeline, servers_.SpanOf("data"));
  const int64_t per_epoch = per_epoch_;
  auto read = [&](int64_t g) {
    if (!lm_)
      return images_->Next(g, total_steps_, servers_.master().members());
    data::Batch window;
    window.images = lm_->Input(g % per_epoch);
    return window;
  };
  *batch = rows_->Take(global, read);
  return servers_.PlanRows(*rows_, global, total_steps_, *batch, read);
}

}  // namespace

Status RunWorker(const TrainerOptions& options, report::EventLog* log) {
  Trainer trainer(options, log);
  PS_RETURN_IF_ERROR(trainer.Join());
  PS_RETURN_IF_ERROR(trainer.Train());
  return trainer.Finish();
}

}  // namespace pstrain::worker
