#include "worker/server_group.h"

#include <algorithm>
#include <utility>

#include <ATen/ATen.h>

#include "data/dataset.h"
#include "net/address.h"
#include "ps/job/job_module.h"
#include "ps/job/tensor_codec.h"
#include "util/check.h"
#include "worker/lost_servers.h"

namespace pstrain::worker {

using Clock = std::chrono::steady_clock;

ServerGroup::ServerGroup(const TrainerOptions& options, report::EventLog* log)
    : options_(options),
      log_(log),
      master_(options.master_addr, options.master_port, options.master_key,
              options.timeout) {}

std::unique_ptr<PsClient> ServerGroup::NewClient(int server_rank) const {
  auto client = std::make_unique<PsClient>(
      options_.timeout,
      net::ConnectionOptions{options_.max_frame_bytes, spec_.dead_after},
      server_rank);
  client->set_auth_token(options_.auth_token);
  return client;
}

Result<ps::JobSpec> ServerGroup::JoinMaster() {
  clients_.push_back(NewClient(0));
  PsClient& master = *clients_.back();
  std::string host;
  int port = 0;
  PS_RETURN_IF_ERROR(master_.Find(false, 0, &host, &port));
  PS_RETURN_IF_ERROR(master.Connect(host, port));
  PS_ASSIGN_OR_RETURN(spec_,
                      master.Handshake(options_.rank, options_.world_size));
  master.set_dead_after(spec_.dead_after);  // made before the job was known
  PS_RETURN_IF_ERROR(UseTransport(master, spec_.transport));
  if (!options_.model.empty()) {
    PS_RETURN_IF_ERROR(ps::UseOwnModuleFile(options_.model, &spec_));
  } else if (ps::IsScriptJob(spec_)) {
    PS_ASSIGN_OR_RETURN(spec_.module, master.FetchModule(spec_.model_sha256));
    log_->Info("took the module " + spec_.model + " (" +
               std::to_string(spec_.module->size()) + " bytes, SHA-256 " +
               spec_.model_sha256 + ") from rank 0");
  }
  return spec_;
}

// Server s > 0 at the address rank 0 gave, or rank 0 itself: connect and
// say hello. Rank 0's answer names where the other servers listen now (a
// restarted one listens elsewhere); the rest of its job spec was taken in
// JoinMaster.
Status ServerGroup::ConnectTo(PsClient& client, int s, bool again) {
  std::string host;
  int port = 0;
  if (s > 0)
    PS_RETURN_IF_ERROR(net::SplitAddress(spec_.server_addrs[s], &host, &port));
  else
    PS_RETURN_IF_ERROR(master_.Find(again, spec_.dead_after, &host, &port));
  // Joining server s > 0 again, at the address rank 0 gave: a refusal
  // there may mean that rank 0 has not yet learnt where s listens now (or
  // is gone itself), so go back and ask it rather than wait at the old one.
  if (again && s > 0) {
    PS_RETURN_IF_ERROR(client.Connect(host, port, kRejoinConnectTimeout));
  } else {
    PS_RETURN_IF_ERROR(client.Connect(host, port));
  }
  auto spec = client.Handshake(options_.rank, options_.world_size);
  if (spec.ok() && s == 0 && !spec_.server_addrs.empty()) {
    spec_.server_addrs = spec->server_addrs;
  }
  PS_RETURN_IF_ERROR(spec.status());
  return UseTransport(client, spec->transport);
}

Status ServerGroup::UseTransport(PsClient& client,
                                 const std::string& transport) {
  PS_ASSIGN_OR_RETURN(std::string line, client.UseTransport(transport));
  log_->Info(line);
  return Status::Ok();
}

// Servers 1..S-1 (at the addresses rank 0 gave), then every server checks
// our model and learns which slices we exchange with it.
Status ServerGroup::JoinServers(const std::vector<wire::KeySpec>& fingerprint) {
  PS_ASSIGN_OR_RETURN(plan_, ps::PlanShardsOf(fingerprint, spec_));
  fingerprint_ = fingerprint;
  if (trace::Timeline* t = options_.timeline) {
    t->NameThread("training");
    std::vector<std::string> names;
    for (const auto& k : fingerprint)
      names.push_back(k.name);
    t->SetKeyNames(std::move(names));
  }
  for (int s = 1; s < spec_.num_servers; ++s) {
    clients_.push_back(NewClient(s));
    PS_RETURN_IF_ERROR(ConnectTo(*clients_.back(), s));
  }
  round_.Reset(spec_.num_servers);
  for (auto& c : clients_)
    PS_RETURN_IF_ERROR(c->Register(fingerprint));
  return Status::Ok();
}

void ServerGroup::Attach(HostMirror* mirror, GradStream* stream) {
  mirror_ = mirror;
  stream_ = stream;
  std::vector<int> slices_per_key(mirror_->params().size(), 0);
  for (const auto& slice : plan_.slices)
    ++slices_per_key[slice.key];
  arrivals_ = std::make_unique<ParamArrivals>(std::move(slices_per_key),
                                              spec_.num_servers);
  if (options_.timeline != nullptr) {
    arrivals_->set_timeline(options_.timeline);
    stream_->KeepReadyTimes();
    for (int s = 0; s < spec_.num_servers; ++s) {
      spans_.push_back(std::make_unique<ExchangeSpans>(
          options_.timeline, &stream_->ready_times(),
          "exchange with rank " + std::to_string(s)));
    }
  }
  auto compression = ps::CompressionOf(spec_);
  PS_CHECK(compression.ok()) << compression.status().ToString();
  compressors_.Plan(*compression, plan_, mirror_->params().size());
  for (int s = 0; s < spec_.num_servers; ++s)
    AttachSlices(*clients_[s], s);
  if (spec_.push_first)
    OrderLink();
  if (compressors_.codes())
    stream_->SetPrepare([this](int key) { compressors_.Prepare(key); });
  fanout_ = std::make_unique<Fanout>(spec_.num_servers + 1, [this](int i) {
    return i > 0 ? ExchangeWith(i - 1) : Status::Ok();
  });
}

// Pushes to servers on other hosts count into the words this worker
// shares with its own host's server, which holds its replies to other
// hosts while they are underway (net/link_turn.h). Without a server of
// this host on shared memory no one reads them: nothing to count.
void ServerGroup::OrderLink() {
  std::shared_ptr<net::ShmLinkWords> words;
  for (auto& c : clients_) {
    if (!words)
      words = c->shm_link_words();
  }
  for (auto& c : clients_) {
    if (words && !c->shm_link_words())
      c->CountPushesInto(words);
  }
}

// Parameters arrive in, and gradients leave from, server s's slices of the
// model's own tensors.
void ServerGroup::AttachSlices(PsClient& client, int s) {
  client.Attach(ps::SliceViews(plan_, s, mirror_->params()),
                ps::SliceViews(plan_, s, mirror_->grads()));
  client.SetPriority(spec_.priority, spec_.send_window);
  client.SetSendGate(stream_->gate(), SliceMarks(s));
  client.SetArrivals(arrivals_.get(), SliceKeys(s));
  client.SetSpans(spans_.empty() ? nullptr : spans_[s].get());
  if (!rows_.empty())
    client.SetSparse(rows_.slots(s));
  client.SetPullCodec(compressors_.spec().pull);
  if (compressors_.of(s) == nullptr)
    MakeCompressor(s);
  client.SetCompressor(compressors_.of(s));
}

// The same rule as the server's (ps::PushCodecOf), slice by slice.
void ServerGroup::MakeCompressor(int s) {
  std::vector<at::Tensor> grads = ps::SliceViews(plan_, s, mirror_->grads());
  const auto& mine = plan_.by_server[s];
  std::vector<bool> trained(mine.size()), sparse(mine.size(), false);
  for (size_t j = 0; j < mine.size(); ++j) {
    const int key = plan_.slices[mine[j]].key;
    sparse[j] = rows_.Holds(s, key);
    trained[j] = mirror_->model_params()[key].requires_grad();
  }
  const uint64_t seed = spec_.seed * wire::kSplitMixGamma ^
                        (static_cast<uint64_t>(options_.rank) << 20) ^
                        static_cast<uint64_t>(s);
  compressors_.Make(s, std::move(grads), trained, sparse, seed);
}

std::vector<int> ServerGroup::SliceKeys(int s) const {
  std::vector<int> keys;
  for (int i : plan_.by_server[s])
    keys.push_back(plan_.slices[i].key);
  return keys;
}

// A slice goes out once its whole key's gradient is final.
std::vector<uint32_t> ServerGroup::SliceMarks(int s) const {
  std::vector<uint32_t> marks;
  for (int i : plan_.by_server[s])
    marks.push_back(stream_->marks()[plan_.slices[i].key]);
  return marks;
}

Status ServerGroup::ExchangeWith(int s) {
  auto v = round_.kind() == Exchange::kPull
               ? clients_[s]->Pull(0)
               : clients_[s]->PushPull(round_.version(s));
  if (!v.ok()) {
    arrivals_->OpenAll();  // what the training thread waits for will not come
    return v.status();
  }
  round_.Answer(s, *v);
  return Status::Ok();
}

void ServerGroup::Start(Exchange what) {
  round_.Start(what);
  for (auto& spans : spans_)
    spans->set_step(step_);
  arrivals_->Begin();
  fanout_->Start();
}

// Waits for the exchange to end (every reply in); the next may start then.
Status ServerGroup::Finish() {
  if (!round_.End())  // none under way
    return Status::Ok();
  trace::Scope wait(options_.timeline, SpanOf("wait exchange"));
  Status s = fanout_->Wait();
  wait.End();
  arrivals_->OpenAll();
  if (reorder_) {  // backward's order differed: push in the new one from now
    for (int i = 0; i < spec_.num_servers; ++i) {
      clients_[i]->SetSendGate(stream_->gate(), SliceMarks(i));
    }
    reorder_ = false;
  }
  if (s.ok())
    version_ = round_.version(0);
  if (s.ok() && round_.kind() == Exchange::kPull)
    ++pulls_;
  return s;
}

Status ServerGroup::ExchangeAll(Exchange what) {
  Start(what);
  return Finish();
}

// A server whose connection was lost (restarted, say): reconnect with
// exponential backoff until --reconnect_timeout, then pull its parameters
// and version and go on from there.
Status ServerGroup::Reconnect(const Status& why) {
  if (options_.reconnect_timeout.count() <= 0)
    return why;
  const std::vector<int> lost = LostServers(clients_, why);
  if (lost.empty())
    return why;
  const auto deadline = Clock::now() + options_.reconnect_timeout;
  const std::string seconds =
      std::to_string(options_.reconnect_timeout.count() / 1000);
  auto backoff = std::chrono::milliseconds(100);
  for (int s : lost) {
    log_->Info("lost rank " + std::to_string(s) + " (" + why.message() +
               "); reconnecting for up to " + seconds + " s");
    PS_RETURN_IF_ERROR(JoinUntil(
        s, [this, s] { return JoinAgain(s); }, deadline, seconds, &backoff));
  }
  ++reconnects_;
  resent_ = false;
  if (Resends(lost)) {
    PS_RETURN_IF_ERROR(Resend(lost));
    log_->Info("sent the push for version " + std::to_string(version_ - 1) +
               " again to the standby that took over; going on from version " +
               std::to_string(version_));
    return Status::Ok();
  }
  if (mirror_ == nullptr) {
    // --placement server: the parameters are the server's alone. In sync
    // the step the server waits for is the one it resumed at, as no step
    // completes without this worker's batch.
    PS_ASSIGN_OR_RETURN(const ps::JobSpec job, clients_[0]->GetJob());
    version_ = job.resume_version;
  } else {
    PS_RETURN_IF_ERROR(ExchangeAll(Exchange::kPull));
  }
  log_->Info("reconnected; going on from version " + std::to_string(version_));
  return Status::Ok();
}

// --replicas: every server not lost answered, and a standby took the
// lost ones' shards over (rank 0's too, with the master's roles, once the
// arbiter named it) at the version this step made or the one before.
// This step's push goes to them again, rather than all being pulled
// from: the step ends as if no server had died.
bool ServerGroup::Resends(const std::vector<int>& lost) const {
  return spec_.replicas > 1 && mirror_ != nullptr &&
         round_.kind() == Exchange::kPushPull && round_.AnsweredAllBut(lost);
}

Status ServerGroup::Resend(const std::vector<int>& lost) {
  arrivals_->Begin();
  Status s = Status::Ok();
  for (int server : lost) {
    if (!round_.answered(server) && s.ok())
      s = ExchangeWith(server);
  }
  arrivals_->OpenAll();
  PS_RETURN_IF_ERROR(s);
  version_ = round_.version(0);
  resent_ = true;
  return Status::Ok();
}

// A fresh connection to server `s`: handshake, model check, slices. A
// server s > 0 may be back at another address: rank 0 says where (and is
// joined again first when it was lost as well).
Status ServerGroup::JoinAgain(int s) {
  if (s > 0) {
    // Rank 0 may be gone too, though no call has found it out yet (a failed
    // GetJob does), or have ended the run with an error: join it again.
    if (!clients_[0]->connected())
      PS_RETURN_IF_ERROR(JoinAgain(0));
    PS_ASSIGN_OR_RETURN(ps::JobSpec job, clients_[0]->GetJob());
    if (job.server_addrs.size() == spec_.server_addrs.size()) {
      spec_.server_addrs = job.server_addrs;
    }
  }
  auto c = NewClient(s);
  PS_RETURN_IF_ERROR(ConnectTo(*c, s, /*again=*/true));
  PS_RETURN_IF_ERROR(c->Register(fingerprint_));
  if (mirror_ != nullptr)  // --placement server attaches none
    AttachSlices(*c, s);
  {
    std::lock_guard<std::mutex> lock(clients_mu_);  // the heartbeats walk it
    clients_[s] = std::move(c);
  }
  if (mirror_ != nullptr && spec_.push_first)
    OrderLink();
  return Status::Ok();
}

void ServerGroup::StartHeartbeats() {
  const double seconds = std::min(spec_.heartbeat, 1.0);
  heartbeats_ = Heartbeats::ToServers(
      std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)),
      &clients_, &clients_mu_, &progress_);
}

void ServerGroup::PublishProgress(const Progress& p, double loss) {
  uint64_t pushed = 0, pulled = 0;
  for (const auto& c : clients_) {
    pushed += c->bytes_pushed_seen();
    pulled += c->bytes_pulled_seen();
  }
  progress_.Publish(FiguresOf(p, loss, version_, pushed, pulled));
}

Status ServerGroup::PushBatch(const data::Batch& batch, double* loss) {
  PsClient& master = *clients_[0];
  PS_ASSIGN_OR_RETURN(*loss,
                      master.PushBatch(version_, batch.images.contiguous(),
                                       batch.labels.contiguous()));
  version_ = master.reply_version();
  return Status::Ok();
}

uint64_t ServerGroup::bytes_pushed() const {
  uint64_t bytes = 0;
  for (const auto& c : clients_)
    bytes += c->bytes_pushed();
  return bytes;
}

uint64_t ServerGroup::bytes_pulled() const {
  uint64_t bytes = 0;
  for (const auto& c : clients_)
    bytes += c->bytes_pulled();
  return bytes;
}

Status ServerGroup::Done(const report::WorkerStats& stats) {
  for (int s = spec_.num_servers - 1; s >= 0; --s) {
    PS_RETURN_IF_ERROR(clients_[s]->Done(stats));
  }
  return Status::Ok();
}

}  // namespace pstrain::worker
