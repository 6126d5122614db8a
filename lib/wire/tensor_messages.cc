// The codecs of the messages about parameters: pull, push_pull and push
// (one codec, GradientsMsg), params, shard and snapshot; and the walk over
// descriptors that ValidateFrame runs on the hot path. Layouts: messages.h.

#include <string>

#include "util/check.h"
#include "wire/messages.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {
namespace {

using internal::MetaReader;
using internal::MetaWriter;

// Smallest encoding of a TensorDesc (rank 0), so that a count the remaining
// bytes cannot hold is refused before anything is allocated for it.
constexpr size_t kMinDescBytes = 15;

void EncodeDescs(uint64_t version, const std::vector<TensorDesc>& descs,
                 std::string* meta) {
  PS_CHECK(descs.size() <= kMaxTensorsPerMessage)
      << descs.size() << " tensors in one message";
  meta->clear();
  MetaWriter w(meta);
  w.U64(version);
  w.U32(static_cast<uint32_t>(descs.size()));
  for (const TensorDesc& d : descs)
    w.Desc(d);
}

// Reads "u64 version, u32 count, count x TensorDesc", handing each
// descriptor to sink(desc), which returns a Status; params then carry
// "u32 count, count x u32 member", each handed to members(worker), and
// "u8 flags" (kParamsStop), stored in *stop when given. Shared by the
// decoders (which store) and the validator (which only sums), so both
// check the same.
template <typename Sink, typename MemberSink>
Status ReadDescs(std::string_view meta, MsgType type, uint64_t* version,
                 Sink&& sink, MemberSink&& members, bool* stop = nullptr) {
  MetaReader r(meta, MsgTypeName(type));
  uint32_t count = 0;
  PS_RETURN_IF_ERROR(r.U64("version", version));
  PS_RETURN_IF_ERROR(r.Count(kMinDescBytes, &count));
  TensorDesc desc;
  PS_RETURN_IF_ERROR(r.Items("tensor", count, [&](uint32_t) {
    PS_RETURN_IF_ERROR(r.Desc(&desc));
    return r.Wrap(sink(desc));
  }));
  if (type == MsgType::kParams) {
    PS_RETURN_IF_ERROR(r.Count(4, &count));
    PS_RETURN_IF_ERROR(r.Items("member", count, [&](uint32_t) {
      uint32_t worker = 0;
      PS_RETURN_IF_ERROR(r.U32("worker", &worker));
      members(worker);
      return Status::Ok();
    }));
    uint8_t flags = 0;
    PS_RETURN_IF_ERROR(r.U8("flags", &flags));
    if ((flags & ~kParamsStop) != 0) {
      return r.Error("flags " + std::to_string(flags) +
                     " has unknown bits, expected 0 or " +
                     std::to_string(kParamsStop));
    }
    if (stop)
      *stop = (flags & kParamsStop) != 0;
  }
  return r.Finish();
}

template <typename Sink>
Status ReadDescs(std::string_view meta, MsgType type, uint64_t* version,
                 Sink&& sink) {
  return ReadDescs(meta, type, version, sink, [](uint32_t) {});
}

Status DecodeDescs(std::string_view meta, MsgType type, uint64_t* version,
                   std::vector<TensorDesc>* out) {
  out->clear();  // keeps capacity: steady state allocates nothing
  return ReadDescs(meta, type, version, [out](const TensorDesc& d) {
    out->push_back(d);
    return Status::Ok();
  });
}

// PushPull and Push: one codec for the layout they share.
template <MsgType kType>
void EncodeGradients(const GradientsMsg<kType>& m, std::string* meta) {
  EncodeDescs(m.version, m.grads, meta);
}

template <MsgType kType>
Status DecodeGradients(std::string_view meta, GradientsMsg<kType>* out) {
  return DecodeDescs(meta, kType, &out->version, &out->grads);
}

}  // namespace

namespace internal {

// Walks the descriptors without storing them, so validating a hot-path
// frame allocates nothing.
Status ValidateTensorMeta(std::string_view meta, MsgType type,
                          uint64_t data_bytes) {
  uint64_t version = 0;
  uint64_t left = data_bytes;
  PS_RETURN_IF_ERROR(
      ReadDescs(meta, type, &version, [&left](const TensorDesc& d) {
        if (d.nbytes > left) {
          return Corruption("nbytes " + std::to_string(d.nbytes) +
                            " exceeds the " + std::to_string(left) +
                            " data bytes left");
        }
        left -= d.nbytes;
        return Status::Ok();
      }));
  if (left == 0)
    return Status::Ok();
  return Corruption(std::string(MsgTypeName(type)) + ": data section is " +
                    std::to_string(data_bytes) + " bytes, descriptors say " +
                    std::to_string(data_bytes - left));
}

}  // namespace internal

void EncodeMeta(const Pull& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).U64(m.min_version);
}

Status DecodeMeta(std::string_view meta, Pull* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  PS_RETURN_IF_ERROR(r.U64("min_version", &out->min_version));
  return r.Finish();
}

void EncodeMeta(const PushPull& m, std::string* meta) {
  EncodeGradients(m, meta);
}

Status DecodeMeta(std::string_view meta, PushPull* out) {
  return DecodeGradients(meta, out);
}

void EncodeMeta(const Push& m, std::string* meta) {
  EncodeGradients(m, meta);
}

Status DecodeMeta(std::string_view meta, Push* out) {
  return DecodeGradients(meta, out);
}

void EncodeMeta(const Params& m, std::string* meta) {
  PS_CHECK(m.members.size() <= kMaxTensorsPerMessage)
      << m.members.size() << " members in one message";
  EncodeDescs(m.version, m.params, meta);
  MetaWriter w(meta);
  w.U32(static_cast<uint32_t>(m.members.size()));
  for (uint32_t worker : m.members)
    w.U32(worker);
  w.U8(m.stop ? kParamsStop : 0);
}

Status DecodeMeta(std::string_view meta, Params* out) {
  out->params.clear();  // both keep capacity: steady state allocates nothing
  out->members.clear();
  return ReadDescs(
      meta, TypeOf(*out), &out->version,
      [out](const TensorDesc& d) {
        out->params.push_back(d);
        return Status::Ok();
      },
      [out](uint32_t worker) { out->members.push_back(worker); }, &out->stop);
}

void EncodeMeta(const Shard& m, std::string* meta) {
  EncodeDescs(m.version, m.params, meta);
}

Status DecodeMeta(std::string_view meta, Shard* out) {
  return DecodeDescs(meta, TypeOf(*out), &out->version, &out->params);
}

void EncodeMeta(const Snapshot& m, std::string* meta) {
  meta->clear();
  MetaWriter w(meta);
  w.U64(m.min_version);
  w.U8(m.with_optimizer_state ? kSnapshotOptimizerState : 0);
}

Status DecodeMeta(std::string_view meta, Snapshot* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  uint8_t flags = 0;
  PS_RETURN_IF_ERROR(r.U64("min_version", &out->min_version));
  PS_RETURN_IF_ERROR(r.U8("flags", &flags));
  if ((flags & ~kSnapshotOptimizerState) != 0) {
    return r.Error("flags " + std::to_string(flags) +
                   " has unknown bits, expected 0 or " +
                   std::to_string(kSnapshotOptimizerState));
  }
  out->with_optimizer_state = (flags & kSnapshotOptimizerState) != 0;
  return r.Finish();
}

}  // namespace pstrain::wire
