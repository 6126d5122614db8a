#include "ps/engine/snapshot_desk.h"

#include <sstream>
#include <utility>

#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"
#include "ps/engine/snapshot_queue.h"
#include "ps/engine/standby_acks.h"
#include "ps/engine/step_driver.h"
#include "ps/engine/step_records.h"
#include "ps/job/tensor_codec.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"
#include "ps/store/snapshot.h"

namespace pstrain::ps {

SnapshotDesk::SnapshotDesk(const ParameterServer* server,
                           const StepDriver* steps, PeerTable* peers,
                           Outbox* outbox)
    : server_(server),
      steps_(steps),
      peers_(peers),
      outbox_(outbox),
      queue_(std::make_unique<SnapshotQueue>()),
      acks_(std::make_unique<StandbyAcks>()),
      records_(std::make_unique<StepRecords>()) {}

SnapshotDesk::~SnapshotDesk() = default;

uint64_t SnapshotDesk::standby_bytes() const {
  return acks_->bytes_sent();
}

void SnapshotDesk::Request(uint64_t min_version, bool with_optimizer_state,
                           Done done, bool replay, bool stopping, Time now) {
  if (stopping) {
    done(nullptr);
    return;
  }
  if (auto record = replay ? records_->Find(min_version) : nullptr) {
    done(std::move(record));  // made already: the standby replays it
    return;
  }
  queue_->Add(min_version, with_optimizer_state, std::move(done), replay);
  if (steps_->complete())
    TakeDue(/*just_made=*/false, now);
}

Result<wire::Snapshot> SnapshotDesk::Ask(Peer& peer, std::string_view meta,
                                         bool stopping) {
  if (!AsTool(peer))
    return InvalidArgument("snapshot from a worker or server");
  wire::Snapshot msg;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &msg));
  if (msg.standby && !stopping) {
    acks_->Asked(peer.id, msg.min_version);
    acks_->Behind(server_->version(), peer.last_heard);  // heard just now
    records_->DropThrough(acks_->held());
  }
  return msg;
}

void SnapshotDesk::Serve(Peer& peer, uint64_t id, const wire::Snapshot& msg,
                         bool stopping, Time now) {
  const PeerId to = peer.id;
  const bool with_optimizer_state = msg.with_optimizer_state;
  const bool standby = msg.standby;
  Request(
      msg.min_version, with_optimizer_state,
      [this, to, id, with_optimizer_state,
       standby](std::shared_ptr<const Snapshot> s) {
        Reply(to, id, with_optimizer_state, standby, std::move(s));
      },
      msg.replay, stopping, now);
}

void SnapshotDesk::Complete(Time now) {
  TakeDue(/*just_made=*/true, now);
  if (on_version_)
    on_version_(server_->version());
}

// One copy serves every request due now (one with the optimizer state if
// any asks for it), and one step record every standby's that it does.
void SnapshotDesk::TakeDue(bool just_made, Time now) {
  const uint64_t version = server_->version();
  const std::vector<int64_t>& applied = steps_->rule().applied();
  if (just_made && acks_->count() > 0) {
    acks_->Behind(version, now);
    if (auto record = TakeStepRecord(*server_, applied, now))
      records_->Add(std::move(record));
  }
  SnapshotQueue::Due due = queue_->TakeDue(version);
  auto record_of = [this](const SnapshotQueue::Request& r) {
    return r.replay ? records_->Find(r.min_version) : nullptr;
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
    auto taken = TakeSnapshot(*server_, applied, with_optimizer_state, now);
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

void SnapshotDesk::Abandon() {
  for (SnapshotQueue::Request& r : queue_->TakeAll())
    r.done(nullptr);
}

bool SnapshotDesk::Drop(PeerId peer, bool stopping) {
  if (!acks_->Drop(peer) || stopping)
    return false;
  records_->DropThrough(acks_->held());
  outbox_->Info("a standby of this server's shard disconnected; " +
                std::to_string(acks_->count()) + " left");
  return true;
}

// A standby that lacks a version made more than --dead_after ago, and has
// said nothing since, is stopped or its host is gone (its kernel may still
// answer TCP's probes): replies to workers wait for it no longer. It asks
// for the next version before it loads the one it got (ps/rank/standby.h),
// so a long load is no silence.
void SnapshotDesk::DropLate(Time now, double dead_after) {
  if (dead_after <= 0)
    return;
  std::vector<PeerId> late;
  acks_->Late(now, dead_after, &late);
  for (PeerId id : late) {
    Peer* peer = peers_->Find(id);
    if (!peer || peer->closing ||
        std::chrono::duration<double>(now - peer->last_heard).count() <=
            dead_after) {
      continue;
    }
    std::ostringstream line;
    line << "no word from the standby at " << peer->remote << " for "
         << dead_after << " s (--dead_after): replies wait for it no longer";
    outbox_->Info(line.str());
    // Closed without an error frame: the standby, when it runs again, finds
    // its copy's connection gone and copies again (an error would say the
    // run ended).
    peer->closing = true;
    outbox_->Close(id, Status::Ok());  // the line above says why
  }
}

bool SnapshotDesk::replicated() const {
  return server_->version() <= acks_->held();
}

// A shard from the snapshot's own copies: nothing here waits for a step.
void SnapshotDesk::Reply(PeerId to, uint64_t id, bool with_optimizer_state,
                         bool standby,
                         std::shared_ptr<const Snapshot> snapshot) {
  Peer* found = peers_->Find(to);
  ToolPeer* peer = found ? AsTool(*found) : nullptr;
  if (!peer || peer->closing)
    return;
  if (!snapshot) {
    return Refuse(*outbox_, *peer, id,
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
  const auto extra = static_cast<uint32_t>(snapshot->params.size());
  if (record) {
    msg.params.push_back(DescribeBytes(extra, sizeof(double)));
  } else if (with_optimizer_state) {
    msg.params.push_back(
        DescribeBytes(extra, snapshot->optimizer_state.size()));
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
      acks_->Sent(d.bytes);
  }
  peer->snapshot = std::move(snapshot);  // its bytes are borrowed until written
  outbox_->Send(to, frame);
}

}  // namespace pstrain::ps
