#include "ps/engine/step_driver.h"

#include <utility>

#include "ps/engine/key_formats.h"
#include "ps/engine/key_updates.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_watch.h"
#include "ps/engine/push_reader.h"
#include "ps/engine/step_deadline.h"
#include "ps/engine/write_fence.h"
#include "ps/job/job_spec.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"

namespace pstrain::ps {

namespace {

// --replicas: a push whose effect this server has already, which a worker
// sends again to the standby that took its server's shard over. Sync: a
// push for a version made already; async, ssp: one naming a version no
// newer than the last push applied from this worker (a worker's pushes
// name growing versions).
bool IsDuplicate(const WorkerPeer& peer, const UpdateRule& rule,
                 const ParameterServer& server) {
  const uint64_t version = peer.pushed_version();
  if (!rule.traits().applies_each_push)
    return version < server.version();
  const int64_t last = rule.applied()[peer.worker];
  return last >= 0 && static_cast<int64_t>(version) <= last;
}

}  // namespace

StepDriver::StepDriver(const JobSpec& spec, ParameterServer* server,
                       KeyFormats* formats, Membership* members,
                       PeerWatch* watch, Outbox* outbox)
    : spec_(spec),
      server_(server),
      formats_(formats),
      members_(members),
      watch_(watch),
      outbox_(outbox),
      rule_(MakeUpdateRule(spec, server)),
      fence_(std::make_unique<WriteFence>()),
      deadline_(std::make_unique<StepDeadline>()),
      reader_(std::make_unique<PushReader>(server, rule_.get(), formats)),
      keys_(std::make_unique<KeyUpdates>(spec.priority, rule_.get(), server,
                                         formats, fence_.get(), members,
                                         outbox)) {
  // A standby copies whole versions, so with --replicas no key may leave
  // before its version is complete and copied.
  rule_->set_step_by_key(spec.replicas <= 1);
}

StepDriver::~StepDriver() = default;

bool StepDriver::ahead() const {
  return keys_->ahead();
}

bool StepDriver::complete() const {
  return !keys_->updating() && rule_->version_complete();
}

net::SendGate* StepDriver::gate() const {
  return keys_->gate();
}

uint64_t StepDriver::timed_out_steps() const {
  return deadline_->timed_out();
}

// A push's descriptors are checked and its bytes planned before any is read.
Status StepDriver::PlanPush(WorkerPeer& peer, wire::MsgType type,
                            std::string_view meta, ReadPlan* plan) {
  const bool push_pull = type == wire::MsgType::kPushPull;
  const char* what = wire::MsgTypeName(type);
  rule_->UpdateAllKeys();  // its pieces go into the accumulators
  peer.push_is_push_pull = push_pull;
  if (push_pull) {
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.push));
  } else {
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.push_only));
  }
  const auto& grads = push_pull ? peer.push.grads : peer.push_only.grads;
  const auto& rows = push_pull ? peer.push.rows : peer.push_only.rows;
  if (grads.size() + rows.size() != static_cast<size_t>(server_->num_keys())) {
    return Corruption(std::string(what) + " carries " +
                      std::to_string(grads.size() + rows.size()) +
                      " tensors, expected " +
                      std::to_string(server_->num_keys()));
  }
  static const std::vector<wire::RowRequest> kNone;
  PS_RETURN_IF_ERROR(reader_->Check(
      grads, rows, push_pull ? peer.push.requests : kNone, what));
  peer.duplicate = spec_.replicas > 1 && IsDuplicate(peer, *rule_, *server_);
  if (!peer.duplicate) {
    PS_RETURN_IF_ERROR(members_->CheckMember(peer.worker));
    PS_RETURN_IF_ERROR(rule_->CheckPush(peer.worker, peer.pushed_version()));
  }
  reader_->Plan(peer, grads, rows, plan);
  outbox_->Trace({nullptr, peer.rank});  // its first key is being read
  plan->piece_by_piece = true;
  peer.replied_ahead = false;
  if (push_pull && rule_->updates_ahead() && rule_->version_complete() &&
      !keys_->ahead())
    OrderKeys(grads);
  return Status::Ok();
}

// The first push of a step sets its order.
void StepDriver::OrderKeys(const std::vector<wire::TensorDesc>& grads) {
  formats_->order.clear();
  for (const auto& d : grads)
    formats_->order.push_back(static_cast<int>(d.key));
  rule_->set_step_order(formats_->order);
}

bool StepDriver::Drops(const WorkerPeer& peer) const {
  return peer.refused_key >= 0 || peer.duplicate;
}

int StepDriver::ReadPiece(WorkerPeer& peer, size_t index) {
  if (Drops(peer))
    return -1;  // the rest of a refused push is dropped, and all of a duplicate
  return Traced(peer, index, reader_->Read(peer, index));
}

// A dense key's piece was added (or its record is whole): the key's push
// is traced once whole.
int StepDriver::Traced(const WorkerPeer& peer, size_t index, int key) const {
  if (key < 0 || !outbox_->tracing())
    return key;
  const WorkerPeer::Piece& piece = peer.pieces[index];
  const uint64_t nbytes = server_->params()[key].nbytes();
  if (piece.record_bytes == 0 && piece.offset + piece.bytes == nbytes) {
    outbox_->Trace({"push", peer.rank, key,
                    static_cast<int64_t>(peer.pushed_version()), nbytes});
  }
  return key;
}

bool StepDriver::ReadsAt(const WorkerPeer& peer, size_t index) const {
  return reader_->ReadsAt(peer, index);
}

int StepDriver::ReadPieceAt(WorkerPeer& peer, size_t index,
                            const uint8_t* data) {
  return Traced(
      peer, index,
      reader_->ReadAt(peer, index, reinterpret_cast<const char*>(data)));
}

Status StepDriver::CheckBatch(int w) {
  rule_->UpdateAllKeys();  // the batch computes on a whole version
  PS_RETURN_IF_ERROR(members_->CheckMember(w));
  return rule_->CheckPush(w, server_->version());
}

void StepDriver::AddBatch(WorkerPeer& peer,
                          const std::vector<at::Tensor>& keys) {
  reader_->AddBatch(peer, keys);
}

bool StepDriver::Holds(const FenceWork& work) {
  return fence_->Holds(work);
}

Result<bool> StepDriver::Apply(WorkerPeer& peer, uint64_t version, Time now) {
  if (stopped_)
    return false;  // the model is final: the push is answered only
  PS_RETURN_IF_ERROR(members_->CheckMember(peer.worker));
  if (!rule_->has_quorum())
    watch_->Progress(now);  // a refused push is progress too
  const bool refused = peer.refused_key >= 0;
  if (refused)
    LogRefusal(peer, version);
  outbox_->Trace({});  // the rule's work starts
  auto closed = rule_->Push(peer.worker, version, refused);
  if (closed.ok() && *closed) {
    outbox_->Trace({"step", TraceMark::kEngine, -1,
                    static_cast<int64_t>(server_->version())});
  }
  if (closed.ok() && !*closed)
    ArmStepTimeout(now);
  return closed;
}

// --step_timeout: the workers not in this long after a step's first push
// are stragglers for that step; it closes with the pushes it has.
void StepDriver::ArmStepTimeout(Time now) {
  const std::optional<Time> wake =
      deadline_->Arm(server_->version(), rule_->pushes_this_step(),
                     rule_->step_timeout(), now);
  if (wake)
    outbox_->WakeAt(*wake);
}

void StepDriver::LogRefusal(const WorkerPeer& peer, uint64_t version) {
  const int key = peer.refused_key;
  const std::string name = formats_->Name(key);
  outbox_->Info("refused the push of rank " + std::to_string(peer.rank) +
                " for version " + std::to_string(version) + ": key " +
                std::to_string(key) + " (" + name + ") " +
                (peer.refused_why.empty() ? std::string("holds NaN or Inf")
                                          : peer.refused_why) +
                "; " + rule_->traits().refused_push_outcome);
}

// Leaving the quorum may close the step: not while parameters are written.
StepDriver::Outcome StepDriver::RemoveWorker(int w) {
  if (fence_->Holds({WriteFence::Work::Kind::kRemoveWorker, w, 0, 0, 0}))
    return Outcome::kHeld;
  if (!members_->LeaveQuorum(w))
    return Outcome::kNone;
  return rule_->RemoveWorker(w) ? Outcome::kClosed : Outcome::kNone;
}

// Back in the quorum from the current step when none of its pushes is in,
// else from the next version; a rank being removed may not rejoin until
// it is.
Result<bool> StepDriver::Rejoin(int w) {
  if (fence_->removing(w)) {
    return Unavailable("rank " + std::to_string(spec_.num_servers + w) +
                       " is still being removed; try again");
  }
  members_->Rejoin(w);
  return rule_->AddWorker(w);
}

std::optional<uint64_t> StepDriver::TimedOut(Time now) const {
  return deadline_->Due(server_->version(), now);
}

StepDriver::Outcome StepDriver::CloseTimedOut(uint64_t version) {
  if (server_->version() != version)
    return Outcome::kNone;
  if (fence_->Holds({WriteFence::Work::Kind::kCloseStep, -1, version, 0, 0}))
    return Outcome::kHeld;
  deadline_->CountTimedOut();
  return rule_->CloseStep() ? Outcome::kClosed : Outcome::kNone;
}

bool StepDriver::CloseVersion() {
  const bool was_ahead = keys_->Close();
  if (std::exchange(stop_after_, false))
    stopped_ = true;
  return was_ahead;
}

bool StepDriver::updating() const {
  return keys_->updating();
}

void StepDriver::OpenAfterAhead() {
  keys_->OpenAfterAhead();
}

bool StepDriver::UpdateNextKey() {
  return keys_->UpdateNextKey();
}

bool StepDriver::TakePosted() {
  return keys_->TakePosted();
}

bool StepDriver::MayUpdateAhead(int key) const {
  return !stopped_ && keys_->MayUpdateAhead(key);
}

bool StepDriver::StartAhead() {
  return keys_->StartAhead();
}

void StepDriver::UpdateAhead(int key) {
  keys_->UpdateAhead(key);
}

void StepDriver::UpdateAllKeys() {
  rule_->UpdateAllKeys();
}

void StepDriver::NoteSent(int w) {
  rule_->NoteParamsSent(w);
}

void StepDriver::Sent(PeerId peer) {
  fence_->Sent(peer);
}

bool StepDriver::Written(PeerId peer) {
  return fence_->Written(peer);
}

bool StepDriver::Closed(PeerId peer) {
  return fence_->Closed(peer);
}

bool StepDriver::fence_open() const {
  return fence_->open();
}

const std::vector<FenceWork>& StepDriver::TakeWaiting() {
  return fence_->TakeWaiting();
}

bool StepDriver::Stop() {
  if (stopped_)
    return false;
  if (keys_->ahead()) {
    // Replies of the next version are out, waiting for its keys: the step
    // closes first (CloseVersion), and the pushes after it are answered.
    stop_after_ = true;
    return false;
  }
  stopped_ = true;
  return true;
}

Status StepDriver::set_applied(std::vector<int64_t> applied) {
  return rule_->set_applied(std::move(applied));
}

}  // namespace pstrain::ps
