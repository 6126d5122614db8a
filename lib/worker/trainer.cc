#include "worker/trainer.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include <torch/torch.h>

#include "data/dataset.h"
#include "data/sampler.h"
#include "models/model_zoo.h"
#include "net/address.h"
#include "ps/shard_plan.h"
#include "ps/tensor_codec.h"
#include "report/worker_stats.h"
#include "util/resources.h"
#include "util/fanout.h"
#include "worker/grad_stream.h"
#include "worker/heartbeats.h"
#include "worker/param_arrivals.h"
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
        log_(log) {}

  Status Join();
  Status Train();
  Status Finish();

 private:
  Status Step(int64_t epoch, int64_t step, double* loss, bool* done);
  torch::Tensor BatchIndices(int64_t epoch, int64_t step);
  void LogStep(int64_t epoch, double loss);
  void LogEpoch(int64_t epoch, int64_t steps, double loss_sum);
  int64_t NextStep() const;
  std::unique_ptr<PsClient> NewClient(int server_rank) const;
  Status ConnectTo(PsClient& client, int server_rank);
  void AttachSlices(PsClient& client, int server_rank) const;
  Status JoinServers(const std::vector<wire::KeySpec>& fingerprint);
  // A pull or push-pull with every server at once, on the exchange threads
  // (Fanout), while this thread computes: a push-pull's gradients leave as
  // backward makes them (GradStream), and its replies' parameters arrive
  // while the next forward starts (ParamArrivals).
  enum class Exchange { kPull, kPushPull };
  void StartExchange(Exchange what);
  Status FinishExchange();
  Status ExchangeAll(Exchange what);  // Start and Finish
  Status ExchangeWith(int server);
  void Backward(torch::Tensor& loss);
  std::vector<uint32_t> SliceMarks(int server) const;
  std::vector<int> SliceKeys(int server) const;
  Status Reconnect(const Status& why);
  Status JoinAgain(int server);
  void StartHeartbeats();

  const TrainerOptions& options_;
  report::EventLog* log_;
  std::unique_ptr<GradStream> stream_;  // clients_ watch its gate
  std::unique_ptr<ParamArrivals> arrivals_;  // clients_ report to it
  std::vector<std::unique_ptr<PsClient>> clients_;  // by server rank
  std::vector<uint64_t> versions_;                  // by server rank
  ps::ShardPlan plan_;
  // Task 1 + s: the exchange with server s; task 0, this thread's, has
  // nothing to do: this thread computes meanwhile.
  std::unique_ptr<Fanout> fanout_;
  bool exchanging_ = false;  // started and not yet finished
  std::unique_ptr<Heartbeats> heartbeats_;  // while training
  int64_t reconnects_ = 0;
  bool stopped_ = false;  // rank 0 said the job stops (--target_accuracy)
  Exchange exchange_ = Exchange::kPull;
  ps::JobSpec spec_;
  std::shared_ptr<models::Model> model_;
  torch::Device device_{torch::kCPU};
  data::Dataset train_;
  std::unique_ptr<HostMirror> mirror_;
  std::exception_ptr backward_error_;
  bool reorder_ = false;
  // On a GPU the host mirror reaches the model only once all is in.
  bool pipelined_ = true;
  std::unique_ptr<data::ShardSampler> sampler_;
  int64_t total_steps_ = 0;
  uint64_t version_ = 0;
  Progress progress_;
};

std::unique_ptr<PsClient> Trainer::NewClient(int server_rank) const {
  auto client = std::make_unique<PsClient>(
      options_.timeout, net::ConnectionOptions{options_.max_frame_bytes}, server_rank);
  client->set_auth_token(options_.auth_token);
  return client;
}

// Server s > 0 at the address rank 0 gave, or rank 0 itself: connect and
// say hello. Rank 0's answer names where the other servers listen now (a
// restarted one listens elsewhere); the rest of its job spec was taken in
// Join.
Status Trainer::ConnectTo(PsClient& client, int s) {
  std::string host = options_.master_addr;
  int port = options_.master_port;
  if (s > 0) PS_RETURN_IF_ERROR(net::SplitAddress(spec_.server_addrs[s], &host, &port));
  PS_RETURN_IF_ERROR(client.Connect(host, port));
  auto spec = client.Handshake(options_.rank, options_.world_size);
  if (spec.ok() && s == 0 && !spec_.server_addrs.empty()) {
    spec_.server_addrs = spec->server_addrs;
  }
  return spec.status();
}

// Parameters arrive in, and gradients leave from, server s's slices of the
// model's own tensors.
void Trainer::AttachSlices(PsClient& client, int s) const {
  client.Attach(ps::SliceViews(plan_, s, mirror_->params),
                ps::SliceViews(plan_, s, mirror_->grads));
  client.SetSendGate(stream_->gate(), SliceMarks(s));
  client.SetArrivals(arrivals_.get(), SliceKeys(s));
}

std::vector<int> Trainer::SliceKeys(int s) const {
  std::vector<int> keys;
  for (int i : plan_.by_server[s]) keys.push_back(plan_.slices[i].key);
  return keys;
}

// A slice goes out once its whole key's gradient is final.
std::vector<uint32_t> Trainer::SliceMarks(int s) const {
  std::vector<uint32_t> marks;
  for (int i : plan_.by_server[s]) marks.push_back(stream_->marks()[plan_.slices[i].key]);
  return marks;
}

// Servers 1..S-1 (at the addresses rank 0 gave), then every server checks
// our model and learns which slices we exchange with it.
Status Trainer::JoinServers(const std::vector<wire::KeySpec>& fingerprint) {
  PS_ASSIGN_OR_RETURN(plan_, ps::PlanShards(fingerprint, spec_.num_servers,
                                            spec_.slice_bytes));
  for (int s = 1; s < spec_.num_servers; ++s) {
    clients_.push_back(NewClient(s));
    PS_RETURN_IF_ERROR(ConnectTo(*clients_.back(), s));
  }
  versions_.assign(spec_.num_servers, 0);
  for (auto& c : clients_) PS_RETURN_IF_ERROR(c->Register(fingerprint));
  return Status::Ok();
}

Status Trainer::ExchangeWith(int s) {
  auto v = exchange_ == Exchange::kPull ? clients_[s]->Pull(0)
                                        : clients_[s]->PushPull(versions_[s]);
  if (!v.ok()) {
    arrivals_->OpenAll();  // what the training thread waits for will not come
    return v.status();
  }
  versions_[s] = *v;
  return Status::Ok();
}

// A server whose connection was lost (restarted, say): reconnect with
// exponential backoff until --reconnect_timeout, then pull its parameters
// and version and go on from there.
Status Trainer::Reconnect(const Status& why) {
  std::vector<int> lost;
  for (int s = 0; s < spec_.num_servers; ++s) {
    if (clients_[s]->lost()) lost.push_back(s);
  }
  if (lost.empty() || options_.reconnect_timeout.count() <= 0) return why;
  heartbeats_.reset();  // it walks clients_, which changes here
  const auto deadline = Clock::now() + options_.reconnect_timeout;
  auto backoff = std::chrono::milliseconds(100);
  for (int s : lost) {
    log_->Info("lost rank " + std::to_string(s) + " (" + why.message() +
               "); reconnecting for up to " +
               std::to_string(options_.reconnect_timeout.count() / 1000) + " s");
    for (;;) {
      Status joined = JoinAgain(s);
      if (joined.ok()) break;
      if (joined.code() != StatusCode::kUnavailable &&
          joined.code() != StatusCode::kTimeout) {
        return joined;
      }
      if (Clock::now() + backoff > deadline) {
        return Unavailable("rank " + std::to_string(s) + " did not come back within " +
                           std::to_string(options_.reconnect_timeout.count() / 1000) +
                           " s (--reconnect_timeout): " + joined.message());
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(2 * backoff, std::chrono::milliseconds(5000));
    }
  }
  ++reconnects_;
  StartHeartbeats();
  PS_RETURN_IF_ERROR(ExchangeAll(Exchange::kPull));
  log_->Info("reconnected; going on from version " + std::to_string(version_));
  return Status::Ok();
}

// A fresh connection to server `s`: handshake, model check, slices. A
// server s > 0 may be back at another address: rank 0 says where (and is
// joined again first when it was lost as well).
Status Trainer::JoinAgain(int s) {
  if (s > 0) {
    // Rank 0 may be gone too, though no call has found it out yet: a failed
    // GetJob does, and the next try joins it again first.
    if (clients_[0]->lost()) PS_RETURN_IF_ERROR(JoinAgain(0));
    PS_ASSIGN_OR_RETURN(ps::JobSpec job, clients_[0]->GetJob());
    if (job.server_addrs.size() == spec_.server_addrs.size()) {
      spec_.server_addrs = job.server_addrs;
    }
  }
  auto c = NewClient(s);
  PS_RETURN_IF_ERROR(ConnectTo(*c, s));
  PS_RETURN_IF_ERROR(c->Register(ps::Fingerprint(*model_)));
  AttachSlices(*c, s);
  clients_[s] = std::move(c);
  return Status::Ok();
}

void Trainer::StartHeartbeats() {
  heartbeats_ = std::make_unique<Heartbeats>(
      std::chrono::milliseconds(static_cast<int64_t>(spec_.heartbeat * 1000)), [this] {
        for (auto& c : clients_) c->Heartbeat();
      });
}

void Trainer::StartExchange(Exchange what) {
  exchange_ = what;
  arrivals_->Begin();
  fanout_->Start();
  exchanging_ = true;
}

// Waits for the exchange to end (every reply in); the next may start then.
Status Trainer::FinishExchange() {
  if (!exchanging_) return Status::Ok();
  exchanging_ = false;
  Status s = fanout_->Wait();
  arrivals_->OpenAll();
  if (reorder_) {  // backward's order differed: push in the new one from now
    for (int i = 0; i < spec_.num_servers; ++i) {
      clients_[i]->SetSendGate(stream_->gate(), SliceMarks(i));
    }
    reorder_ = false;
  }
  if (s.ok()) version_ = versions_[0];
  return s;
}

Status Trainer::ExchangeAll(Exchange what) {
  StartExchange(what);
  return FinishExchange();
}

// Backward, with each gradient released to the pushes as it is final. An
// error in backward ends the pushes unsent and is rethrown once they stop.
void Trainer::Backward(torch::Tensor& loss) {
  try {
    loss.backward();
    mirror_->GradsToHost();
  } catch (...) {
    backward_error_ = std::current_exception();
    stream_->Abort();
    return;
  }
  reorder_ = stream_->End();
}

Status Trainer::Join() {
  PS_ASSIGN_OR_RETURN(device_, ParseDevice(options_.device));
  clients_.push_back(NewClient(0));
  PsClient& master = *clients_.back();
  PS_RETURN_IF_ERROR(master.Connect(options_.master_addr, options_.master_port));
  PS_ASSIGN_OR_RETURN(spec_, master.Handshake(options_.rank, options_.world_size));
  torch::manual_seed(spec_.seed);
  PS_ASSIGN_OR_RETURN(model_, options_.make_model
                                  ? options_.make_model(spec_.model)
                                  : models::MakeModel(spec_.model));
  // Check our own input before joining, so that bad input ends this worker
  // alone and does not look like a worker lost mid-job.
  PS_ASSIGN_OR_RETURN(train_, LoadTrainSet(spec_, options_.data_dir));
  if (spec_.batch_size * spec_.num_workers() > train_.size()) {
    return InvalidArgument("--batch_size " + std::to_string(spec_.batch_size) +
                           " x " + std::to_string(spec_.num_workers()) +
                           " workers exceeds the " + std::to_string(train_.size()) +
                           " training samples");
  }
  PS_RETURN_IF_ERROR(JoinServers(ps::Fingerprint(*model_)));
  model_->to(device_);
  mirror_ = std::make_unique<HostMirror>(*model_);
  pipelined_ = mirror_->on_cpu;
  stream_ = std::make_unique<GradStream>(mirror_->model_params, pipelined_);
  std::vector<int> slices_per_key(mirror_->params.size(), 0);
  for (const auto& slice : plan_.slices) ++slices_per_key[slice.key];
  arrivals_ = std::make_unique<ParamArrivals>(std::move(slices_per_key), spec_.num_servers);
  if (pipelined_) model_->set_await([this](size_t n) { arrivals_->WaitKeys(n); });
  for (int s = 0; s < spec_.num_servers; ++s) AttachSlices(*clients_[s], s);
  fanout_ = std::make_unique<Fanout>(spec_.num_servers + 1, [this](int i) {
    return i > 0 ? ExchangeWith(i - 1) : Status::Ok();
  });
  sampler_ = std::make_unique<data::ShardSampler>(
      train_.size(), spec_.num_workers(), options_.rank - spec_.num_servers,
      spec_.batch_size, spec_.seed);
  total_steps_ = spec_.epochs * sampler_->steps_per_epoch();
  if (spec_.max_steps > 0) total_steps_ = std::min(total_steps_, spec_.max_steps);
  return Status::Ok();
}

// The global step this worker computes next. Sync: version v means v
// global steps are done (a resumed server starts past 0; a straggler whose
// push was dropped, --backup_workers, jumps ahead), so the worker computes
// step v on the batch an uninterrupted run sees there. Async and ssp
// versions count every push of every worker, so there the worker counts its
// own steps.
int64_t Trainer::NextStep() const {
  return spec_.mode == ps::Mode::kSync ? static_cast<int64_t>(version_)
                                       : progress_.steps;
}

Status Trainer::Train() {
  // Dropout draws differ per worker but repeat from run to run.
  torch::manual_seed(spec_.seed * 1000 + options_.rank);
  StartHeartbeats();
  PS_RETURN_IF_ERROR(ExchangeAll(Exchange::kPull));
  mirror_->ParamsToModel();
  progress_ = Progress{};
  model_->train();
  const int64_t per_epoch = sampler_->steps_per_epoch();
  int64_t epoch = -1, epoch_steps = 0;
  double loss_sum = 0;
  for (;;) {
    const int64_t step = NextStep();
    if (!stopped_ && clients_[0]->stop_requested()) {
      stopped_ = true;
      log_->Info("rank 0 stopped the job at version " + std::to_string(version_) +
                 " (--target_accuracy reached)");
    }
    if (step >= total_steps_ || stopped_) {
      // The last replies in full; a server lost meanwhile may set us back.
      Status last = FinishExchange();
      if (last.ok()) break;
      PS_RETURN_IF_ERROR(Reconnect(last));
      continue;
    }
    if (step / per_epoch != epoch) {
      if (epoch >= 0) LogEpoch(epoch, epoch_steps, loss_sum);
      epoch = step / per_epoch;
      epoch_steps = 0;
      loss_sum = 0;
    }
    double loss = 0;
    bool done = false;
    PS_RETURN_IF_ERROR(Step(epoch, step % per_epoch, &loss, &done));
    if (!done) continue;  // reconnected: the step to compute may differ
    loss_sum += loss;
    ++epoch_steps;
    if (progress_.steps % spec_.log_interval == 0 || NextStep() >= total_steps_) {
      LogStep(epoch, loss);
    }
  }
  if (epoch >= 0) LogEpoch(epoch, epoch_steps, loss_sum);
  heartbeats_.reset();
  return Status::Ok();
}

void Trainer::LogEpoch(int64_t epoch, int64_t steps, double loss_sum) {
  log_->Emit("epoch", {{"epoch", epoch + 1},
                       {"steps", steps},
                       {"loss", loss_sum / std::max<int64_t>(1, steps)}});
}

// This worker's slice of the global batch; with --reassign_shards after a
// loss, its part of the global batch shared by the workers the server
// named.
torch::Tensor Trainer::BatchIndices(int64_t epoch, int64_t step) {
  const auto& members = clients_[0]->members();
  const uint32_t me = static_cast<uint32_t>(options_.rank - spec_.num_servers);
  auto it = std::find(members.begin(), members.end(), me);
  if (!spec_.reassign_shards || it == members.end()) {
    return sampler_->BatchIndices(epoch, step);
  }
  return sampler_->GlobalBatchPart(epoch, step, static_cast<int>(it - members.begin()),
                                   static_cast<int>(members.size()));
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
  data::Batch batch = data::GetBatch(train_, BatchIndices(epoch, step));
  // The last push has left whole: its reply's meta is in.
  model_->zero_grad(/*set_to_none=*/false);
  auto out = model_->forward(batch.images.to(device_));
  auto nll = torch::nll_loss(out, batch.labels.to(device_));
  const auto t_wait = Clock::now();
  Status last = FinishExchange();
  double communication = Seconds(Clock::now() - t_wait);
  if (!last.ok()) {
    // Forward may have read parameters that never came: start again from
    // the server's.
    PS_RETURN_IF_ERROR(Reconnect(last));
    return Status::Ok();
  }
  stream_->Begin();  // before the pushes start, which wait on it
  StartExchange(Exchange::kPushPull);
  Backward(nll);
  if (backward_error_) {
    (void)FinishExchange();
    std::rethrow_exception(std::exchange(backward_error_, nullptr));
  }
  *loss = nll.item<double>();
  const bool replied = arrivals_->WaitMeta();
  if (replied) version_ = clients_[0]->reply_version();
  if (!replied || !pipelined_) {
    const auto t_finish = Clock::now();
    Status s = FinishExchange();
    communication += Seconds(Clock::now() - t_finish);
    // A lost connection loses this step's gradients; the next step starts
    // from the server's parameters.
    if (!s.ok()) PS_RETURN_IF_ERROR(Reconnect(s));
    mirror_->ParamsToModel();
  }
  const double wall = Seconds(Clock::now() - t0);
  communication += arrivals_->TakeWaitedSeconds();
  progress_.compute += wall - communication;
  progress_.communication += communication;
  progress_.samples += batch.labels.size(0);
  ++progress_.steps;
  *done = true;
  return Status::Ok();
}

void Trainer::LogStep(int64_t epoch, double loss) {
  double wall = Seconds(Clock::now() - progress_.start);
  log_->Emit("step", {{"epoch", epoch + 1},
                      {"step", std::min(NextStep(), total_steps_)},
                      {"total_steps", total_steps_},
                      {"loss", loss},
                      {"version", version_},
                      {"samples_per_second", progress_.samples / wall}});
}

Status Trainer::Finish() {
  report::WorkerStats stats;
  stats.steps = progress_.steps;
  stats.samples = progress_.samples;
  stats.wall_seconds = Seconds(Clock::now() - progress_.start);
  stats.samples_per_second =
      stats.wall_seconds > 0
          ? static_cast<double>(stats.samples) / stats.wall_seconds
          : 0.0;
  stats.compute_seconds = progress_.compute;
  stats.communication_seconds = progress_.communication;
  for (const auto& c : clients_) {
    stats.bytes_pushed += c->bytes_pushed();
    stats.bytes_pulled += c->bytes_pulled();
  }
  stats.version = version_;
  stats.reconnects = reconnects_;
  stats.stopped_early = stopped_;
  stats.peak_rss_bytes = PeakRssBytes();
  // Servers 1..S-1 first: rank 0 ends only after their shards are in.
  for (int s = spec_.num_servers - 1; s >= 0; --s) {
    PS_RETURN_IF_ERROR(clients_[s]->Done(stats));
  }
  log_->Emit("summary", report::ToJson(stats));
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
