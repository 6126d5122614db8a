// New versions and the replies that carry them: a sync step's keys are
// stepped one at a time, or ahead of the step's close, so that each key's
// parameters leave while the next is stepped or still arriving; and the
// work the WriteFence held runs once the parameter writes have ended.

#include <utility>

#include "ps/engine/engine.h"
#include "ps/engine/peer.h"

namespace pstrain::ps {

// A sync step's keys are stepped one per Continue, in the step's order,
// after the replies are queued: each key's parameters leave as soon as it
// is stepped (the frames wait on key_steps_.gate), while the next is
// stepped, and workers start their next forward on the first layers
// meanwhile (worker/param_arrivals.h). Keys stepped ahead of the close
// (StepAhead) are skipped.
void Engine::OnNewVersion() {
  watch_.Progress(now_);
  const bool ahead = key_steps_.ahead;
  key_steps_.ahead = false;
  fence_.set_own_replies(false);
  if (std::exchange(key_steps_.stop_after, false))
    stop_training_ = true;
  if (!rule_->version_whole() && !key_steps_.stepping) {
    if (!ahead)
      key_steps_.gate.Reset();  // the replies out already wait on it
    key_steps_.stepping = true;
  }
  ReleaseReplies();
  if (!key_steps_.stepping) {
    if (ahead)
      OpenKeyGate();  // a discarded step: the rest stays as it was
    return VersionWhole();
  }
  StepNextKey();
}

void Engine::StepNextKey() {
  outbox_->Trace({});  // the key's update starts
  const int key = rule_->StepNextKey();
  if (key >= 0) {
    outbox_->Trace({"update", TraceMark::kEngine, key,
                    static_cast<int64_t>(server_->version())});
    // Replies queued before this step point at the key's record.
    formats_.pull.Encode(key, server_->params()[key], server_->version());
    OpenKeyMark(key);
    OpenKeyGate();
    key_steps_.posted = true;  // between two keys the writes go on
    outbox_->Post();
    return;
  }
  key_steps_.stepping = false;
  OpenKeyGate();
  VersionWhole();
  StepKeysAhead();  // keys of the next step that came in meanwhile
}

// The replies' bytes may leave up to the first key not stepped. While the
// step is stepped ahead of its close, the last key waits for the close,
// so that no worker has its whole reply, and pushes again, before the
// server's version is the reply's.
void Engine::OpenKeyGate() {
  const StepOrder& order = rule_->step_order();
  uint32_t open = net::SendGate::kAll;
  if (key_steps_.ahead) {
    open = std::min<uint32_t>(order.prefix(),
                              static_cast<uint32_t>(server_->num_keys()) - 1);
  } else if (key_steps_.stepping) {
    open = order.prefix();
  }
  key_steps_.gate.OpenTo(open);
  ResumeParamWrites();
}

// --priority: a tagged reply sends each key as soon as it is stepped,
// ahead of earlier keys still waiting, but for the last key of the order
// while the step is stepped ahead of its close (OpenKeyGate).
void Engine::OpenKeyMark(int key) {
  const uint32_t mark = rule_->step_order().Mark(key);
  if (!spec_.priority ||
      (key_steps_.ahead && mark >= static_cast<uint32_t>(server_->num_keys())))
    return;
  key_steps_.gate.Open(mark);
}

// Streaming sync: key `key` is stepped as soon as every member's pieces of
// it are in, before the step closes, so that its parameters leave while
// later keys are still arriving: a step costs about the longer of the push
// and the pull, not their sum.
void Engine::StepAhead(int key) {
  if (!rule_->steps_ahead() || stop_training_ || stopping_ ||
      key_steps_.stepping || !rule_->ReadyAhead(key))
    return;
  if (!key_steps_.ahead && !StartStepAhead())
    return;
  outbox_->Trace({});  // the key's update starts
  rule_->StepAhead(key);
  const uint64_t next = server_->version() + 1;
  outbox_->Trace(
      {"update", TraceMark::kEngine, key, static_cast<int64_t>(next)});
  formats_.pull.Encode(key, server_->params()[key], next);
  OpenKeyMark(key);
  OpenKeyGate();
}

void Engine::StepKeysAhead() {
  if (!rule_->steps_ahead() || key_steps_.stepping || stop_training_)
    return;
  for (int k : rule_->step_order().keys())
    StepAhead(k);
}

// The step's first key ahead of the close: only once no reply of the
// previous version is being written (parameters change under it). Then
// every push of this step, whole or being read, is answered at once.
bool Engine::StartStepAhead() {
  if (!fence_.open() || !rule_->version_whole())
    return false;
  key_steps_.ahead = true;
  fence_.set_own_replies(true);
  key_steps_.gate.Reset();
  const uint64_t next = server_->version() + 1;
  for (int w = 0; w < members_.num_workers(); ++w) {
    WorkerPeer* p = members_.peer(w);
    if (!p)
      continue;
    // A worker's reply starts once its own push is in. Meanwhile the
    // replies of those whose pushes are in have the link (or the cores)
    // to themselves and end sooner, so their next step starts sooner;
    // started at once, every reply shares the rate and all end late.
    // Two hosts at 1 Gbit/s, Net, sync, --priority: 684 samples/s
    // against 605 (share/doc/benchmarks.md, "Across hosts").
    if (p->held.waiting && !p->held.ssp && p->held.min_version <= next) {
      p->held.waiting = false;
      p->waiting_seconds += Seconds(p->held.since);
      SendParams(*p, p->held.id, true);
    }
  }
  return true;
}

void Engine::VersionWhole() {
  TakeDueSnapshots(/*just_made=*/true);
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
  const std::vector<WriteFence::Work>& work = fence_.TakeWaiting();
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
  StepKeysAhead();  // keys that were in while replies were on the wire
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

void Engine::SendParams(WorkerPeer& peer, uint64_t id, bool ahead) {
  if (peer.closing)
    return;
  if (batches_.on())
    return SendBatchDone(peer, id);  // the model stays on the server
  const uint64_t version = server_->version() + (ahead ? 1 : 0);
  peer.replied_ahead = ahead;
  formats_.params_msg.version = version;
  formats_.params_msg.stop = stop_training_;
  formats_.params_msg.members.clear();
  if (spec_.reassign_shards && members_.quorum() < members_.num_workers()) {
    for (int w = 0; w < members_.num_workers(); ++w) {
      if (members_.in_quorum(w))
        formats_.params_msg.members.push_back(w);
    }
  }
  rule_->NoteParamsSent(peer.worker);
  outbox_->Trace(
      {"reply", peer.rank, -1, static_cast<int64_t>(version), 0, peer.id});
  if (!peer.rows_out.want.empty())
    return SendRows(peer, id);
  // Keys in the step's order (ps/rules/step_order.h), each as it is stepped.
  const StepOrder& order = rule_->step_order();
  formats_.params_msg.params.clear();
  out_.data.clear();
  for (int k : order.keys()) {
    formats_.params_msg.params.push_back(formats_.params_by_key[k]);
    const auto [data, nbytes] = ParamBytes(k, peer.worker, version);
    out_.data.push_back({data, nbytes, order.Mark(k)});
  }
  wire::EncodeMeta(formats_.params_msg, &peer.meta);
  SendParamsFrame(peer, id, spec_.priority);
}

void Engine::SendParamsFrame(WorkerPeer& peer, uint64_t id, bool tagged) {
  out_.type = wire::MsgType::kParams;
  out_.request_id = id;
  out_.meta = peer.meta;
  out_.gate = &key_steps_.gate;
  out_.tagged = tagged;
  out_.send_window = tagged ? spec_.send_window : 0;
  out_.after_pushes_below =
      tagged && spec_.push_first ? formats_.params_msg.version : 0;
  fence_.Sent(peer.id);
  outbox_->Send(peer.id, out_);
}

std::pair<const void*, uint64_t> Engine::ParamBytes(int key, int worker,
                                                    uint64_t version) {
  const at::Tensor& p = rule_->SentParam(worker, key);
  if (formats_.pull.codec(key) == wire::Codec::kRaw)
    return {p.data_ptr(), p.nbytes()};
  const StepOrder& order = rule_->step_order();
  if (order.idle() || order.stepped(key))
    formats_.pull.Refresh(key, p, version);
  return {formats_.pull.data(key), formats_.pull.nbytes(key)};
}

}  // namespace pstrain::ps
