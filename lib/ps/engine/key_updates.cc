#include "ps/engine/key_updates.h"

#include <algorithm>
#include <utility>

#include "ps/engine/key_formats.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/write_fence.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"

namespace pstrain::ps {

KeyUpdates::KeyUpdates(bool priority, UpdateRule* rule,
                       const ParameterServer* server, KeyFormats* formats,
                       WriteFence* fence, const Membership* members,
                       Outbox* outbox)
    : priority_(priority),
      rule_(rule),
      server_(server),
      formats_(formats),
      fence_(fence),
      members_(members),
      outbox_(outbox) {
  gate_.SetMarks(static_cast<uint32_t>(server_->num_keys()));
  gate_.OpenTo(net::SendGate::kAll);
}

// The replies queued after this wait on the gate for the keys not yet
// updated (workers start their next forward on the first layers meanwhile,
// worker/param_arrivals.h).
bool KeyUpdates::Close() {
  const bool was_ahead = std::exchange(ahead_, false);
  fence_->set_own_replies(false);
  if (!rule_->version_complete() && !updating_) {
    if (!was_ahead)
      gate_.Reset();  // the replies out already wait on it
    updating_ = true;
  }
  return was_ahead;
}

void KeyUpdates::OpenAfterAhead() {
  OpenKeyGate();  // a discarded step: the rest stays as it was
}

bool KeyUpdates::UpdateNextKey() {
  outbox_->Trace({});  // the key's update starts
  const int key = rule_->UpdateNextKey();
  if (key >= 0) {
    outbox_->Trace({"update", TraceMark::kEngine, key,
                    static_cast<int64_t>(server_->version())});
    // Replies queued before this step point at the key's record.
    formats_->pull.Encode(key, server_->params()[key], server_->version());
    OpenKeyMark(key);
    OpenKeyGate();
    posted_ = true;  // between two keys the writes go on
    outbox_->Post();
    return false;
  }
  updating_ = false;
  OpenKeyGate();
  return true;
}

bool KeyUpdates::TakePosted() {
  return std::exchange(posted_, false) && updating_;
}

bool KeyUpdates::MayUpdateAhead(int key) const {
  return rule_->updates_ahead() && !updating_ && rule_->ReadyAhead(key);
}

bool KeyUpdates::StartAhead() {
  if (!fence_->open() || !rule_->version_complete())
    return false;
  ahead_ = true;
  fence_->set_own_replies(true);
  gate_.Reset();
  return true;
}

void KeyUpdates::UpdateAhead(int key) {
  outbox_->Trace({});  // the key's update starts
  rule_->UpdateAhead(key);
  const uint64_t next = server_->version() + 1;
  outbox_->Trace(
      {"update", TraceMark::kEngine, key, static_cast<int64_t>(next)});
  formats_->pull.Encode(key, server_->params()[key], next);
  OpenKeyMark(key);
  OpenKeyGate();
}

// The replies' bytes may leave up to the first key not updated. While the
// step is updated ahead of its close, the last key waits for the close,
// so that no worker has its whole reply, and pushes again, before the
// server's version is the reply's.
void KeyUpdates::OpenKeyGate() {
  const StepOrder& order = rule_->step_order();
  uint32_t open = net::SendGate::kAll;
  if (ahead_) {
    open = std::min<uint32_t>(order.prefix(),
                              static_cast<uint32_t>(server_->num_keys()) - 1);
  } else if (updating_) {
    open = order.prefix();
  }
  gate_.OpenTo(open);
  ResumeParamWrites();
}

// --priority: a tagged reply sends each key as soon as it is updated,
// ahead of earlier keys still waiting, but for the last key of the order
// while the step is updated ahead of its close (OpenKeyGate).
void KeyUpdates::OpenKeyMark(int key) {
  const uint32_t mark = rule_->step_order().Mark(key);
  if (!priority_ ||
      (ahead_ && mark >= static_cast<uint32_t>(server_->num_keys())))
    return;
  gate_.Open(mark);
}

void KeyUpdates::ResumeParamWrites() {
  for (int w = 0; w < members_->num_workers(); ++w) {
    const WorkerPeer* p = members_->peer(w);
    if (p && fence_->in_flight(p->id) > 0)
      outbox_->ResumeWrite(p->id);
  }
}

}  // namespace pstrain::ps
