#include "testing/engine_harness.h"

#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ps/engine/master_desk.h"
#include "ps/job/tensor_codec.h"
#include "wire/frame_parser.h"

namespace pstrain::testing {

wire::Done DoneWith(int64_t samples) {
  report::WorkerStats stats;
  stats.samples = samples;
  return wire::Done{report::ToJson(stats).dump()};
}

ps::JobSpec SgdSpec(ps::Mode mode, int workers) {
  ps::JobSpec s;
  s.mode = mode;
  s.lr = 0.5;
  s.momentum = 0;
  s.world_size = workers + 1;
  s.dead_after = 0;
  return s;
}

EngineHarness::EngineHarness(const ps::JobSpec& spec,
                             std::vector<at::Tensor> params,
                             ps::EngineOptions options,
                             std::vector<bool> row_sparse)
    : spec_(spec),
      params_(std::move(params)),
      now_(ps::Time{} + std::chrono::hours(1)) {
  server_ = std::make_unique<ps::ParameterServer>(spec_, params_,
                                                  std::move(row_sparse));
  std::vector<wire::KeySpec> fingerprint;
  for (size_t k = 0; k < params_.size(); ++k) {
    fingerprint.push_back(ps::KeySpecOf("k" + std::to_string(k), params_[k]));
  }
  engine_ = std::make_unique<ps::Engine>(spec_, fingerprint, server_.get(),
                                         &outbox_, std::move(options));
  engine_->master().set_address("127.0.0.1:1");
  engine_->Start(now_);
}

void EngineHarness::Tick() {
  now_ += ps::Engine::kTick;
  engine_->Tick(now_);
}

ps::PeerId EngineHarness::Accept() {
  const ps::PeerId id = next_peer_++;
  engine_->OnAccept(id, "127.0.0.1:" + std::to_string(40000 + id), now_);
  return id;
}

// As net::Connection does: the parser's stages, the engine asked between
// them, and the engine's buffers checked against the data section.
Status EngineHarness::FeedRaw(ps::PeerId peer, wire::MsgType type,
                              const std::string& meta, uint64_t id,
                              const std::vector<const char*>& data,
                              uint64_t data_bytes, int pieces) {
  std::string prefix;
  wire::EncodeFramePrefix(type, id, meta, data_bytes, &prefix);
  wire::FrameParser parser(wire::kDefaultMaxFrameBytes);
  PS_RETURN_IF_ERROR(parser.Header(prefix.data()));
  PS_RETURN_IF_ERROR(engine_->OnHeader(peer, parser.header()));
  PS_RETURN_IF_ERROR(parser.MetaLen(prefix.data() + wire::kFrameHeaderBytes));
  PS_RETURN_IF_ERROR(parser.Meta(meta));
  ps::ReadPlan plan;
  PS_RETURN_IF_ERROR(
      engine_->OnMeta(peer, parser.header(), meta, data_bytes, &plan));
  uint64_t planned = 0;
  for (const auto& b : plan.buffers)
    planned += b.bytes;
  if (planned != data_bytes)
    return Corruption("the engine planned other than the data");
  // Each source in `data` holds one planned buffer's bytes.
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (pieces >= 0 && static_cast<int>(i) == pieces)
      return Status::Ok();
    std::memcpy(plan.buffers[i].data, data[i], plan.buffers[i].bytes);
    if (plan.piece_by_piece)
      engine_->OnPiece(peer, i, now_);
  }
  engine_->OnFrame(peer, parser.header(), meta, now_);
  return Status::Ok();
}

Status EngineHarness::PushTagged(ps::PeerId peer, uint64_t version,
                                 const std::vector<at::Tensor>& grads,
                                 uint64_t id, const std::vector<int>& arrive) {
  wire::PushPull m{version, {}};
  uint64_t data_bytes = 0;
  for (size_t k = 0; k < grads.size(); ++k) {
    m.grads.push_back(ps::DescribeTensor(static_cast<uint32_t>(k), grads[k]));
    data_bytes += wire::kTagBytes + grads[k].nbytes();
  }
  std::string meta, prefix;
  wire::EncodeMeta(m, &meta);
  wire::EncodeFramePrefix(wire::MsgType::kPushPull, id, meta, data_bytes,
                          &prefix, wire::kFrameTagged);
  wire::FrameParser parser(wire::kDefaultMaxFrameBytes);
  PS_RETURN_IF_ERROR(parser.Header(prefix.data()));
  PS_RETURN_IF_ERROR(parser.MetaLen(prefix.data() + wire::kFrameHeaderBytes));
  PS_RETURN_IF_ERROR(parser.Meta(meta));
  ps::ReadPlan plan;
  PS_RETURN_IF_ERROR(
      engine_->OnMeta(peer, parser.header(), meta, data_bytes, &plan));
  if (plan.groups.size() != grads.size())
    return Corruption("the engine named other than one group per key");
  for (int k : arrive) {
    const size_t end = static_cast<size_t>(k) + 1 < plan.groups.size()
                           ? plan.groups[k + 1]
                           : plan.buffers.size();
    const char* src = static_cast<const char*>(grads[k].data_ptr());
    for (size_t i = plan.groups[k]; i < end; ++i) {
      std::memcpy(plan.buffers[i].data, src, plan.buffers[i].bytes);
      src += plan.buffers[i].bytes;
      engine_->OnPiece(peer, i, now_);
    }
  }
  if (arrive.size() == grads.size())
    engine_->OnFrame(peer, parser.header(), meta, now_);
  return Status::Ok();
}

ps::PeerId EngineHarness::JoinWorker(int rank) {
  const ps::PeerId peer = Accept();
  wire::Hello hello{wire::Role::kWorker, static_cast<uint32_t>(rank),
                    static_cast<uint32_t>(spec_.world_size)};
  EXPECT_TRUE(Feed(peer, hello, 1).ok());
  wire::Register reg;
  for (size_t k = 0; k < params_.size(); ++k) {
    reg.keys.push_back(ps::KeySpecOf("k" + std::to_string(k), params_[k]));
  }
  EXPECT_TRUE(Feed(peer, reg, 2).ok());
  EXPECT_EQ(CountSent(peer, wire::MsgType::kAck), 1)
      << "register of rank " << rank;
  return peer;
}

Status EngineHarness::Push(ps::PeerId peer, uint64_t version,
                           const std::vector<at::Tensor>& grads, uint64_t id,
                           bool push_pull, int pieces,
                           const std::vector<int>& order) {
  std::vector<int> keys = order;
  if (keys.empty()) {
    for (size_t k = 0; k < grads.size(); ++k)
      keys.push_back(static_cast<int>(k));
  }
  std::vector<wire::TensorDesc> descs;
  for (int k : keys)
    descs.push_back(ps::DescribeTensor(k, grads[k]));
  std::string meta;
  if (push_pull) {
    wire::EncodeMeta(wire::PushPull{version, descs}, &meta);
  } else {
    wire::EncodeMeta(wire::Push{version, descs}, &meta);
  }
  std::vector<const char*> data;
  uint64_t data_bytes = 0;
  for (int k : keys) {
    const at::Tensor& g = grads[k];
    data_bytes += g.nbytes();
    const char* base = static_cast<const char*>(g.data_ptr());
    for (uint64_t off = 0; off < g.nbytes();
         off += ps::ParameterServer::kPieceBytes) {
      data.push_back(base + off);
    }
  }
  return FeedRaw(peer,
                 push_pull ? wire::MsgType::kPushPull : wire::MsgType::kPush,
                 meta, id, data, data_bytes, pieces);
}

Status EngineHarness::PushRows(ps::PeerId peer, uint64_t version,
                               const std::vector<at::Tensor>& grads,
                               const std::vector<KeyRows>& rows,
                               const std::vector<wire::RowRequest>& want,
                               uint64_t id) {
  wire::PushPull m{version, {}};
  std::vector<const char*> data;
  uint64_t data_bytes = 0;
  std::vector<bool> sparse(grads.size(), false);
  for (const auto& r : rows)
    sparse[r.key] = true;
  for (size_t k = 0; k < grads.size(); ++k) {
    if (sparse[k])
      continue;
    m.grads.push_back(ps::DescribeTensor(k, grads[k]));
    data_bytes += grads[k].nbytes();
    const char* base = static_cast<const char*>(grads[k].data_ptr());
    for (uint64_t off = 0; off < grads[k].nbytes();
         off += ps::ParameterServer::kPieceBytes) {
      data.push_back(base + off);
    }
  }
  for (const auto& r : rows) {
    m.rows.push_back({ps::DescribeTensor(r.key, r.rows), r.ids});
    const char* bytes = static_cast<const char*>(r.rows.data_ptr());
    if (r.codec != wire::Codec::kRaw) {
      m.rows.back().rows.codec = r.codec;
      m.rows.back().rows.nbytes = r.record.size();
      bytes = reinterpret_cast<const char*>(r.record.data());
    }
    data_bytes += m.rows.back().rows.nbytes;
    if (m.rows.back().rows.nbytes > 0)
      data.push_back(bytes);
  }
  m.requests = want;
  std::string meta;
  wire::EncodeMeta(m, &meta);
  return FeedRaw(peer, wire::MsgType::kPushPull, meta, id, data, data_bytes);
}

Status EngineHarness::PushRecords(ps::PeerId peer, uint64_t version,
                                  const std::vector<Record>& records,
                                  uint64_t id) {
  wire::PushPull m{version, {}};
  std::vector<const char*> data;
  uint64_t data_bytes = 0;
  for (size_t k = 0; k < records.size(); ++k) {
    wire::TensorDesc d = ps::DescribeTensor(k, params_[k]);
    d.codec = records[k].codec;
    d.nbytes = records[k].bytes.size();
    m.grads.push_back(d);
    data_bytes += d.nbytes;
    const char* base = reinterpret_cast<const char*>(records[k].bytes.data());
    for (uint64_t off = 0; off < d.nbytes;
         off += ps::ParameterServer::kPieceBytes) {
      data.push_back(base + off);
    }
  }
  std::string meta;
  wire::EncodeMeta(m, &meta);
  return FeedRaw(peer, wire::MsgType::kPushPull, meta, id, data, data_bytes);
}

void EngineHarness::Close(ps::PeerId peer, const Status& why) {
  engine_->OnClose(peer, why, now_);
}

void EngineHarness::RunPosts() {
  while (outbox_.posts > 0) {
    --outbox_.posts;
    engine_->Continue(now_);
  }
}

void EngineHarness::WriteAll() {
  while (written_ < outbox_.sent.size()) {
    const FakeOutbox::Sent s = outbox_.sent[written_++];
    engine_->OnWritten(s.peer, s.type, now_);
  }
}

void EngineHarness::Settle() {
  while (outbox_.posts > 0 || written_ < outbox_.sent.size()) {
    RunPosts();
    WriteAll();
  }
}

std::vector<EngineHarness::ParamsReply> EngineHarness::ParamsTo(
    ps::PeerId peer) const {
  std::vector<ParamsReply> out;
  for (const auto& s : outbox_.sent) {
    if (s.peer != peer || s.type != wire::MsgType::kParams)
      continue;
    wire::Params p;
    EXPECT_TRUE(wire::DecodeMeta(s.meta, &p).ok());
    out.push_back({s.request_id, p.version, p.stop});
  }
  return out;
}

std::optional<FakeOutbox::Closed> EngineHarness::ClosedFor(
    ps::PeerId peer) const {
  for (const auto& c : outbox_.closed) {
    if (c.peer == peer)
      return c;
  }
  return std::nullopt;
}

int EngineHarness::CountSent(ps::PeerId peer, wire::MsgType type) const {
  int n = 0;
  for (const auto& s : outbox_.sent)
    n += s.peer == peer && s.type == type;
  return n;
}

}  // namespace pstrain::testing
