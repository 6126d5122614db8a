// Snapshots of this server's parameters at a version, for rank 0's observer
// (a tool peer, or rank 0's own code) and for standbys: copied the moment
// that version is whole, so that scoring and saving them never hold a step
// up. A standby that holds the version before gets the step's record
// instead (replication after aggregation), when it asked in time: the
// record is taken as the version is made, before the next step's pushes
// land in its gradients.

#include "ps/engine/engine.h"
#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"

namespace pstrain::ps {

// Every key of the current version stepped, and no step under way.
bool Engine::VersionComplete() const {
  return !key_steps_.stepping && rule_->version_whole();
}

void Engine::RequestSnapshot(uint64_t min_version, bool with_optimizer_state,
                             SnapshotDone done, Time now, bool replay) {
  now_ = now;
  if (stopping_) {
    done(nullptr);
    return;
  }
  if (auto record = replay ? records_.Find(min_version) : nullptr) {
    done(std::move(record));  // made already: the standby replays it
    return;
  }
  snapshots_.Add(min_version, with_optimizer_state, std::move(done), replay);
  if (VersionComplete())
    TakeDueSnapshots(/*just_made=*/false);
}

// One copy serves every request due now (one with the optimizer state if
// any asks for it), and one step record every standby's that it does.
void Engine::TakeDueSnapshots(bool just_made) {
  const uint64_t version = server_->version();
  if (just_made && standbys_.count() > 0) {
    if (auto record = TakeStepRecord(*server_, rule_->applied(), now_))
      records_.Add(std::move(record));
  }
  SnapshotQueue::Due due = snapshots_.TakeDue(version);
  auto record_of = [this](const SnapshotQueue::Request& r) {
    return r.replay ? records_.Find(r.min_version) : nullptr;
  };
  bool whole = false;
  bool with_optimizer_state = false;
  for (const SnapshotQueue::Request& r : due.requests) {
    if (!record_of(r)) {
      whole = true;
      with_optimizer_state = with_optimizer_state || r.with_optimizer_state;
    }
  }
  std::shared_ptr<const Snapshot> snapshot;
  if (whole) {
    auto taken =
        TakeSnapshot(*server_, rule_->applied(), with_optimizer_state, now_);
    if (taken.ok()) {
      snapshot = *taken;
    } else {
      outbox_->Info("snapshot of version " + std::to_string(version) +
                    " failed: " + taken.status().message());
    }
  }
  for (SnapshotQueue::Request& r : due.requests) {
    auto record = record_of(r);
    r.done(record ? std::move(record) : snapshot);
  }
}

// The run ends: no version will be made for the requests still waiting.
void Engine::AbandonSnapshots() {
  for (SnapshotQueue::Request& r : snapshots_.TakeAll())
    r.done(nullptr);
}

Status Engine::OnSnapshot(Peer& peer, uint64_t id, std::string_view meta) {
  if (!AsTool(peer))
    return InvalidArgument("snapshot from a worker or server");
  wire::Snapshot msg;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &msg));
  const bool with_optimizer_state = msg.with_optimizer_state;
  const PeerId to = peer.id;
  if (msg.standby && !stopping_) {
    standbys_.Asked(to, msg.min_version);
    records_.DropThrough(standbys_.held());
    ReleaseReplies();  // those that waited for this version's copy
  }
  const bool standby = msg.standby;
  RequestSnapshot(
      msg.min_version, with_optimizer_state,
      [this, to, id, with_optimizer_state,
       standby](std::shared_ptr<const Snapshot> s) {
        ReplySnapshot(to, id, with_optimizer_state, standby, std::move(s));
      },
      now_, msg.replay);
  return Status::Ok();
}

// A shard from the snapshot's own copies: nothing here waits for a step.
void Engine::ReplySnapshot(PeerId to, uint64_t id, bool with_optimizer_state,
                           bool standby,
                           std::shared_ptr<const Snapshot> snapshot) {
  Peer* found = peers_.Find(to);
  ToolPeer* peer = found ? AsTool(*found) : nullptr;
  if (!peer || peer->closing)
    return;
  if (!snapshot) {
    return Refuse(*peer, id,
                  Unavailable("the run ended at version " +
                              std::to_string(server_->version()) +
                              " before the snapshot asked for"));
  }
  wire::Shard msg;
  msg.version = snapshot->version;
  for (size_t k = 0; k < snapshot->params.size(); ++k) {
    msg.params.push_back(
        DescribeTensor(static_cast<uint32_t>(k), snapshot->params[k]));
  }
  const bool record = snapshot->step_record;
  if (record) {
    msg.params.push_back(DescribeBytes(
        static_cast<uint32_t>(snapshot->params.size()), sizeof(double)));
  } else if (with_optimizer_state) {
    msg.params.push_back(
        DescribeBytes(static_cast<uint32_t>(snapshot->params.size()),
                      snapshot->optimizer_state.size()));
  }
  const uint64_t applied_bytes = snapshot->applied.size() * sizeof(int64_t);
  if (standby) {
    msg.params.push_back(
        DescribeBytes(static_cast<uint32_t>(msg.params.size()), applied_bytes));
  }
  if (record) {
    wire::EncodeMeta(wire::StepRecord{msg.version, msg.params}, &peer->meta);
  } else {
    wire::EncodeMeta(msg, &peer->meta);
  }
  OutFrame frame;
  frame.type = record ? wire::MsgType::kStepRecord : wire::MsgType::kShard;
  frame.request_id = id;
  frame.meta = peer->meta;
  for (const at::Tensor& t : snapshot->params)
    frame.data.push_back({t.data_ptr(), t.nbytes()});
  if (record) {
    frame.data.push_back({&snapshot->lr, sizeof(double)});
  } else if (with_optimizer_state) {
    frame.data.push_back(
        {snapshot->optimizer_state.data(), snapshot->optimizer_state.size()});
  }
  if (standby) {
    frame.data.push_back({snapshot->applied.data(), applied_bytes});
    for (const DataSpan& d : frame.data)
      standbys_.Sent(d.bytes);
  }
  peer->snapshot = std::move(snapshot);  // its bytes are borrowed until written
  outbox_->Send(to, frame);
}

void Engine::StopTraining(Time now) {
  now_ = now;
  if (stop_training_)
    return;
  if (key_steps_.ahead) {
    // Replies of the next version are out, waiting for its keys: the step
    // closes first (OnNewVersion), and the pushes after it are answered.
    key_steps_.stop_after = true;
    return;
  }
  stop_training_ = true;
  ReleaseReplies();
}

}  // namespace pstrain::ps
