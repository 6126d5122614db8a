// New versions: a sync step's keys are stepped one at a time so that each
// key's parameters leave while the next is stepped, and the work the
// WriteFence held runs once the parameter writes have ended.

#include "ps/engine.h"
#include "ps/peer.h"

namespace pstrain::ps {

// A sync step's keys are stepped one per Continue, in key order, after the
// replies are queued: each key's parameters leave as soon as they are
// stepped (the frames wait on key_steps_.gate), while the next is stepped, and
// workers start their next forward on the first layers meanwhile
// (worker/param_arrivals.h).
void Engine::OnNewVersion() {
  last_progress_ = now_;
  if (server_->first_unstepped_key() < server_->num_keys() &&
      !key_steps_.stepping) {
    key_steps_.gate.Reset();
    key_steps_.stepping = true;
  }
  ReleaseReplies();
  if (!key_steps_.stepping)
    return VersionWhole();
  StepNextKey();
}

void Engine::StepNextKey() {
  outbox_->Trace({});  // the key's update starts
  const int key = server_->StepNextKey();
  if (key >= 0) {
    outbox_->Trace({"update", TraceMark::kEngine, key,
                    static_cast<int64_t>(server_->version())});
    // Replies queued before this step point at the key's record.
    formats_.pull.Encode(key, server_->params()[key], server_->version());
    key_steps_.gate.OpenTo(static_cast<uint32_t>(key) + 1);
    ResumeParamWrites();
    key_steps_.posted = true;  // between two keys the writes go on
    outbox_->Post();
    return;
  }
  key_steps_.stepping = false;
  key_steps_.gate.OpenTo(net::SendGate::kAll);
  ResumeParamWrites();
  VersionWhole();
}

void Engine::VersionWhole() {
  TakeDueSnapshots();
  if (on_version_)
    on_version_(server_->version());
}

void Engine::ResumeParamWrites() {
  for (int w = 0; w < members_.num_workers(); ++w) {
    const WorkerPeer* p = members_.peer(w);
    if (p && fence_.in_flight(p->id) > 0)
      outbox_->ResumeWrite(p->id);
  }
}

void Engine::Continue(Time now) {
  now_ = now;
  if (key_steps_.posted) {
    key_steps_.posted = false;
    if (key_steps_.stepping)
      StepNextKey();
  }
  if (fence_.open())
    RunFenced();
}

void Engine::OnWritten(PeerId id, wire::MsgType type, Time now) {
  if (type != wire::MsgType::kParams)
    return;
  now_ = now;
  if (fence_.Written(id))
    RunFenced();
}

// What waited for the parameter writes, in order: lost and finished
// workers leave the quorum, timed-out steps close, then the held pushes.
void Engine::RunFenced() {
  std::vector<WriteFence::Work> work;
  work.swap(fenced_);  // its capacity, so that nothing allocates
  fence_.TakeWaiting(&work);
  using Kind = WriteFence::Work::Kind;
  for (const auto& w : work) {
    if (w.kind == Kind::kRemoveWorker)
      RemoveWorker(w.worker);
  }
  for (const auto& w : work) {
    if (w.kind == Kind::kCloseStep)
      CloseTimedOutStep(w.version);
  }
  RunHeldPushes(work);
  work.clear();
  fenced_.swap(work);
}

// All steps first, then all answers, so that no step changes parameters
// that an answer is sending. A removal above may be sending parameters
// already: then the pushes wait again.
void Engine::RunHeldPushes(const std::vector<WriteFence::Work>& work) {
  using Kind = WriteFence::Work::Kind;
  if (!fence_.open()) {
    for (const auto& w : work) {
      if (w.kind == Kind::kPush)
        (void)fence_.Holds(w);
    }
    return;
  }
  bool stepped = false;
  for (const auto& w : work) {
    WorkerPeer* peer =
        w.kind == Kind::kPush ? peers_.FindWorker(w.peer) : nullptr;
    if (!peer)
      continue;
    // Sends nothing: the fence stays open.
    auto s = Step(*peer, peer->pushed_version());
    if (!s.ok()) {
      Refuse(*peer, w.request_id, s.status());
      continue;
    }
    stepped = stepped || *s;
  }
  if (stepped)
    OnNewVersion();
  for (const auto& w : work) {
    WorkerPeer* peer =
        w.kind == Kind::kPush ? peers_.FindWorker(w.peer) : nullptr;
    if (peer && !peer->closing)
      AnswerPush(*peer, w.request_id);
  }
}

}  // namespace pstrain::ps
