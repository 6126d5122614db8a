#include "ps/engine/reply_desk.h"

#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>

#include "ps/engine/key_formats.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/step_driver.h"
#include "ps/job/job_spec.h"
#include "ps/job/tensor_codec.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"
#include "util/check.h"
#include "wire/compression.h"

namespace pstrain::ps {

namespace {

// The rows `ids` of `table` (float32 [rows, row_dim], contiguous) coded
// in `codec` into out, one row after another: a per-element codec codes
// each row as it would the whole gathered tensor, without gathering it.
void EncodeRows(wire::Codec codec, const at::Tensor& table,
                const std::vector<int64_t>& ids, uint8_t* out) {
  PS_CHECK(table.is_contiguous() && table.scalar_type() == at::kFloat)
      << "rows of a table that is not contiguous float32";
  const size_t dim = static_cast<size_t>(table.size(1));
  const size_t row_bytes = wire::CompressedBytes(codec, {}, dim);
  const float* base = table.data_ptr<float>();
  for (size_t j = 0; j < ids.size(); ++j) {
    wire::Encode(codec, {}, base + static_cast<size_t>(ids[j]) * dim, dim, 0,
                 out + j * row_bytes);
  }
}

}  // namespace

ReplyDesk::ReplyDesk(const JobSpec& spec, const ParameterServer* server,
                     KeyFormats* formats, const Membership* members,
                     const StepDriver* steps, Outbox* outbox)
    : spec_(spec),
      server_(server),
      formats_(formats),
      members_(members),
      steps_(steps),
      outbox_(outbox),
      ssp_(spec.num_workers(), spec.staleness),
      held_(spec.num_workers()),
      rows_(spec.num_workers()) {
  due_.reserve(held_.size());
}

Result<ReplyAnswer> ReplyDesk::Await(const WorkerPeer& peer, uint64_t id,
                                     uint64_t min_version, bool ssp,
                                     bool replicated, Time now) {
  Held& held = held_[peer.worker];
  if (held.waiting)
    return InvalidArgument("a pull is already pending");
  const uint64_t version = server_->version();
  if (steps_->ahead() && !steps_->stopped()) {
    // Some keys hold the next version already: answer with it, each key
    // as it is updated.
    if (!ssp && min_version <= version + 1)
      return ReplyAnswer::kAhead;
    min_version = std::max(min_version, version + 1);
  }
  if (steps_->stopped() || (version >= min_version && replicated &&
                            (!ssp || ssp_.Allows(peer.worker)))) {
    return ReplyAnswer::kNow;
  }
  held = Held{true, id, min_version, ssp, now};
  return ReplyAnswer::kHeld;
}

Result<ReplyAnswer> ReplyDesk::OnPull(WorkerPeer& peer, uint64_t id,
                                      std::string_view meta, bool batches,
                                      bool replicated, Time now) {
  if (batches) {
    return InvalidArgument(
        "pull: the model trains on the server (--placement server)");
  }
  wire::Pull pull;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &pull));
  rows_[peer.worker].want.clear();  // a pull returns whole tensors
  const uint64_t min_version =
      std::max(pull.min_version, peer.first_pull_min_version);
  peer.first_pull_min_version = 0;
  return Await(peer, id, min_version, false, replicated, now);
}

Result<ReplyAnswer> ReplyDesk::AnswerPush(WorkerPeer& peer, uint64_t id,
                                          bool replicated, Time now) {
  if (!peer.push_is_push_pull) {
    peer.meta.clear();
    Reply(*outbox_, peer, wire::MsgType::kAck, id);
    return ReplyAnswer::kNone;
  }
  if (peer.replied_ahead) {
    peer.replied_ahead = false;
    return ReplyAnswer::kNone;
  }
  rows_[peer.worker].want = peer.push.requests;
  const UpdateRule& rule = steps_->rule();
  return Await(peer, id, rule.ReplyVersion(peer.push.version),
               rule.bounds_staleness(), replicated, now);
}

const std::vector<ReplyDesk::Due>& ReplyDesk::TakeDue(bool replicated,
                                                      Time now) {
  due_.clear();
  for (int w = 0; w < members_->num_workers(); ++w) {
    WorkerPeer* p = members_->peer(w);
    const Held& h = held_[w];
    if (!p || !h.waiting)
      continue;
    if (!steps_->stopped()) {
      if (server_->version() < h.min_version || !replicated)
        continue;
      if (h.ssp && !ssp_.Allows(w))
        continue;
    }
    Take(*p, false, now);
  }
  return due_;
}

// A worker's reply starts once its own push is in. Meanwhile the replies
// of those whose pushes are in have the link (or the cores) to themselves
// and end sooner, so their next step starts sooner; started at once, every
// reply shares the rate and all end late. Two hosts at 1 Gbit/s, Net,
// sync, --priority: 684 samples/s against 605 (share/doc/benchmarks.md,
// "Across hosts").
const std::vector<ReplyDesk::Due>& ReplyDesk::TakeAhead(Time now) {
  due_.clear();
  const uint64_t next = server_->version() + 1;
  for (int w = 0; w < members_->num_workers(); ++w) {
    WorkerPeer* p = members_->peer(w);
    const Held& h = held_[w];
    if (p && h.waiting && !h.ssp && h.min_version <= next)
      Take(*p, true, now);
  }
  return due_;
}

void ReplyDesk::Take(WorkerPeer& p, bool ahead, Time now) {
  Held& h = held_[p.worker];
  h.waiting = false;
  h.ssp = false;
  p.waiting_seconds += std::chrono::duration<double>(now - h.since).count();
  due_.push_back({&p, h.id, ahead});
}

void ReplyDesk::Forget(int w) {
  held_[w] = Held{};
}

void ReplyDesk::SendParams(WorkerPeer& peer, uint64_t id, bool ahead) {
  const uint64_t version = server_->version() + (ahead ? 1 : 0);
  peer.replied_ahead = ahead;
  wire::Params& msg = formats_->params_msg;
  msg.version = version;
  msg.stop = steps_->stopped();
  msg.members.clear();
  if (spec_.reassign_shards && members_->quorum() < members_->num_workers()) {
    for (int w = 0; w < members_->num_workers(); ++w) {
      if (members_->in_quorum(w))
        msg.members.push_back(w);
    }
  }
  outbox_->Trace(
      {"reply", peer.rank, -1, static_cast<int64_t>(version), 0, peer.id});
  if (wants_rows(peer.worker))
    return SendRows(peer, id);
  // Keys in the step's order (ps/rules/step_order.h), each as it is updated.
  const StepOrder& order = steps_->rule().step_order();
  msg.params.clear();
  out_.data.clear();
  for (int k : order.keys()) {
    msg.params.push_back(formats_->params_by_key[k]);
    const auto [data, nbytes] = ParamBytes(k, peer.worker, version);
    out_.data.push_back({data, nbytes, order.Mark(k)});
  }
  wire::EncodeMeta(msg, &peer.meta);
  SendFrame(peer, id, spec_.priority);
}

// Row-sparse keys (share/doc/design.md, "Sparse rows"): the reply to a
// push_pull carries the rows it asked for instead of those tables, in the
// codecs of ps::PullRowsCodecOf (raw, fp16 or bf16).
void ReplyDesk::SendRows(WorkerPeer& peer, uint64_t id) {
  Rows& r = rows_[peer.worker];
  const auto& params = server_->params();
  r.msg.version = server_->version();
  r.msg.stop = steps_->stopped();
  r.msg.members = formats_->params_msg.members;
  r.msg.params.clear();
  r.msg.rows.resize(r.want.size());
  r.rows.resize(r.want.size());
  std::vector<bool> asked(params.size(), false);
  for (const auto& q : r.want)
    asked[q.key] = true;
  out_.data.clear();
  const StepOrder& order = steps_->rule().step_order();
  for (size_t k = 0; k < params.size(); ++k) {
    if (asked[k])
      continue;
    r.msg.params.push_back(formats_->params_by_key[k]);
    const auto [data, nbytes] =
        ParamBytes(static_cast<int>(k), peer.worker, server_->version());
    out_.data.push_back({data, nbytes, order.Mark(static_cast<int>(k))});
  }
  r.records.resize(r.want.size());
  for (size_t i = 0; i < r.want.size(); ++i)
    EncodeRow(r, i);
  wire::EncodeMeta(r.msg, &peer.meta);
  SendFrame(peer, id, false);
}

// Request i's rows, raw (gathered) or coded into its record.
void ReplyDesk::EncodeRow(Rows& r, size_t i) {
  const wire::RowRequest& q = r.want[i];
  const at::Tensor table = server_->params()[q.key].detach();
  const wire::Codec codec = PullRowsCodecOf(formats_->compression, table);
  r.msg.rows[i].ids = q.ids;
  if (codec == wire::Codec::kRaw) {
    r.rows[i] = table.index_select(0, at::tensor(q.ids, at::kLong));
    r.msg.rows[i].rows = DescribeTensor(q.key, r.rows[i]);
    out_.data.push_back({r.rows[i].data_ptr(), r.rows[i].nbytes(), 0});
    return;
  }
  wire::TensorDesc& d = r.msg.rows[i].rows;
  d = DescribeTensor(q.key, table);
  d.dims[0] = static_cast<int64_t>(q.ids.size());
  d.codec = codec;
  d.nbytes = wire::CompressedBytes(codec, formats_->compression.params,
                                   static_cast<size_t>(d.numel()));
  std::vector<uint8_t>& record = r.records[i];
  record.resize(d.nbytes);  // grows to the largest request, then reused
  EncodeRows(codec, table, q.ids, record.data());
  out_.data.push_back({record.data(), d.nbytes, 0});
}

void ReplyDesk::SendBatchDone(WorkerPeer& peer, uint64_t id) {
  wire::EncodeMeta(
      wire::BatchDone{server_->version(), peer.batch.loss, steps_->stopped()},
      &peer.meta);
  Reply(*outbox_, peer, wire::MsgType::kBatchDone, id);
}

// Where key k's parameters leave from, and how many bytes: the tensor, or
// its --pull_compression record of `version` (made now, unless the key is
// still to be updated: KeyUpdates makes it then); for `worker`, whom
// lookahead (ps::UsesLookahead) sends parameters of its own.
std::pair<const void*, uint64_t> ReplyDesk::ParamBytes(int key, int worker,
                                                       uint64_t version) {
  const at::Tensor& p = steps_->rule().SentParam(worker, key);
  if (formats_->pull.codec(key) == wire::Codec::kRaw)
    return {p.data_ptr(), p.nbytes()};
  const StepOrder& order = steps_->rule().step_order();
  if (order.idle() || order.stepped(key))
    formats_->pull.Refresh(key, p, version);
  return {formats_->pull.data(key), formats_->pull.nbytes(key)};
}

// The data waits on the key gate; the WriteFence heard of it already.
void ReplyDesk::SendFrame(WorkerPeer& peer, uint64_t id, bool tagged) {
  out_.type = wire::MsgType::kParams;
  out_.request_id = id;
  out_.meta = peer.meta;
  out_.gate = steps_->gate();
  out_.tagged = tagged;
  out_.send_window = tagged ? spec_.send_window : 0;
  out_.after_pushes_below =
      tagged && spec_.push_first ? formats_->params_msg.version : 0;
  outbox_->Send(peer.id, out_);
}

}  // namespace pstrain::ps
