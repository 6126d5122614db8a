// The codecs of the messages that carry no tensors and set up, answer or
// end a conversation: hello, error, get_job, job_spec, register, ack, done,
// heartbeat, server_info and get_module. Layouts: messages.h. The auth
// messages are in auth_messages.cc, the messages about parameters in
// tensor_messages.cc, module (which carries a file) in module_messages.cc.

#include <array>
#include <string>

#include "util/check.h"
#include "wire/messages.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {
namespace {

using internal::MetaReader;
using internal::MetaWriter;

// Smallest encoding of a KeySpec (empty name, dtype, ndim), so that a count
// the remaining bytes cannot hold is refused before anything is allocated.
constexpr size_t kMinKeySpecBytes = 6;
constexpr uint16_t kMaxErrorCode =
    static_cast<uint16_t>(StatusCode::kIncompatible);
constexpr uint8_t kMaxRole = static_cast<uint8_t>(Role::kTool);
constexpr uint8_t kMaxClaim = static_cast<uint8_t>(Claim::kCopy);

template <typename M>
const char* NameOf(const M& m) {
  return MsgTypeName(TypeOf(m));
}

Status DecodeString(std::string_view meta, MsgType type, const char* field,
                    std::string* out) {
  MetaReader r(meta, MsgTypeName(type));
  PS_RETURN_IF_ERROR(r.Str(field, out));
  return r.Finish();
}

Status DecodeEmpty(std::string_view meta, MsgType type) {
  return MetaReader(meta, MsgTypeName(type)).Finish();
}

Status ReadKeySpec(MetaReader* r, KeySpec* key) {
  uint8_t dtype = 0;
  uint8_t ndim = 0;
  std::array<int64_t, kMaxTensorRank> dims{};
  PS_RETURN_IF_ERROR(r->Str("name", &key->name));
  PS_RETURN_IF_ERROR(r->U8("dtype", &dtype));
  PS_RETURN_IF_ERROR(r->Wrap(internal::CheckDType(dtype)));
  PS_RETURN_IF_ERROR(r->U8("ndim", &ndim));
  PS_RETURN_IF_ERROR(r->Wrap(internal::CheckRank(ndim)));
  for (int i = 0; i < ndim; ++i) {
    PS_RETURN_IF_ERROR(r->I64("dims", &dims[i]));
  }
  PS_RETURN_IF_ERROR(r->Wrap(internal::CheckDims(dims.data(), ndim)));
  key->dtype = static_cast<DType>(dtype);
  key->shape.assign(dims.begin(), dims.begin() + ndim);
  return Status::Ok();
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kServer:
      return "server";
    case Role::kWorker:
      return "worker";
    case Role::kTool:
      return "tool";
  }
  return "unknown";
}

void EncodeMeta(const Hello& m, std::string* meta) {
  meta->clear();
  MetaWriter w(meta);
  w.U8(static_cast<uint8_t>(m.role));
  w.U32(m.rank);
  w.U32(m.world_size);
  w.U8(static_cast<uint8_t>(m.claim));
  w.U32(m.claimant);
  w.U64(m.version);
}

Status DecodeMeta(std::string_view meta, Hello* out) {
  MetaReader r(meta, NameOf(*out));
  uint8_t role = 0;
  PS_RETURN_IF_ERROR(r.U8("role", &role));
  if (role < 1 || role > kMaxRole) {
    return r.Error("role " + std::to_string(role) +
                   " is unknown, expected 1.." + std::to_string(kMaxRole));
  }
  PS_RETURN_IF_ERROR(r.U32("rank", &out->rank));
  PS_RETURN_IF_ERROR(r.U32("world_size", &out->world_size));
  uint8_t claim = 0;
  PS_RETURN_IF_ERROR(r.U8("claim", &claim));
  if (claim > kMaxClaim) {
    return r.Error("claim " + std::to_string(claim) +
                   " is unknown, expected 0.." + std::to_string(kMaxClaim));
  }
  if (claim != 0 && role != static_cast<uint8_t>(Role::kServer)) {
    return r.Error("claim " + std::to_string(claim) + " from a " +
                   RoleName(static_cast<Role>(role)) +
                   ", expected 0 (only a server's standby claims)");
  }
  PS_RETURN_IF_ERROR(r.U32("claimant", &out->claimant));
  PS_RETURN_IF_ERROR(r.U64("version", &out->version));
  out->role = static_cast<Role>(role);
  out->claim = static_cast<Claim>(claim);
  return r.Finish();
}

void EncodeMeta(const ErrorMsg& m, std::string* meta) {
  meta->clear();
  MetaWriter w(meta);
  w.U16(static_cast<uint16_t>(m.code));
  w.Str(m.message);
}

Status DecodeMeta(std::string_view meta, ErrorMsg* out) {
  MetaReader r(meta, NameOf(*out));
  uint16_t code = 0;
  PS_RETURN_IF_ERROR(r.U16("code", &code));
  if (code < 1 || code > kMaxErrorCode) {  // kOk is not an error
    return r.Error("code " + std::to_string(code) +
                   " is unknown, expected 1.." + std::to_string(kMaxErrorCode));
  }
  PS_RETURN_IF_ERROR(r.Str("message", &out->message));
  out->code = static_cast<StatusCode>(code);
  return r.Finish();
}

void EncodeMeta(const GetJob&, std::string* meta) {
  meta->clear();
}

Status DecodeMeta(std::string_view meta, GetJob* out) {
  return DecodeEmpty(meta, TypeOf(*out));
}

void EncodeMeta(const JobSpecMsg& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.json);
}

Status DecodeMeta(std::string_view meta, JobSpecMsg* out) {
  return DecodeString(meta, TypeOf(*out), "json", &out->json);
}

void EncodeMeta(const Register& m, std::string* meta) {
  PS_CHECK(m.keys.size() <= kMaxTensorsPerMessage)
      << m.keys.size() << " keys in one message";
  meta->clear();
  MetaWriter w(meta);
  w.U32(static_cast<uint32_t>(m.keys.size()));
  for (const KeySpec& k : m.keys) {
    PS_CHECK(k.shape.size() <= kMaxTensorRank)
        << k.name << " has rank " << k.shape.size();
    w.Str(k.name);
    w.U8(static_cast<uint8_t>(k.dtype));
    w.U8(static_cast<uint8_t>(k.shape.size()));
    for (int64_t d : k.shape)
      w.I64(d);
  }
}

Status DecodeMeta(std::string_view meta, Register* out) {
  MetaReader r(meta, NameOf(*out));
  uint32_t count = 0;
  PS_RETURN_IF_ERROR(r.Count(kMinKeySpecBytes, &count));
  std::vector<KeySpec>& keys = out->keys;
  // Decode into the elements already there, so their strings and shapes
  // keep their capacity; only new elements are constructed.
  PS_RETURN_IF_ERROR(r.Items("key", count, [&](uint32_t i) {
    if (i == keys.size())
      keys.emplace_back();
    return ReadKeySpec(&r, &keys[i]);
  }));
  keys.resize(count);
  return r.Finish();
}

void EncodeMeta(const Ack&, std::string* meta) {
  meta->clear();
}

Status DecodeMeta(std::string_view meta, Ack* out) {
  return DecodeEmpty(meta, TypeOf(*out));
}

void EncodeMeta(const Done& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.json);
}

Status DecodeMeta(std::string_view meta, Done* out) {
  return DecodeString(meta, TypeOf(*out), "json", &out->json);
}

void EncodeMeta(const Heartbeat& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.json);
}

Status DecodeMeta(std::string_view meta, Heartbeat* out) {
  return DecodeString(meta, TypeOf(*out), "json", &out->json);
}

void EncodeMeta(const ServerInfo& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.address);
}

Status DecodeMeta(std::string_view meta, ServerInfo* out) {
  return DecodeString(meta, TypeOf(*out), "address", &out->address);
}

void EncodeMeta(const GetModule&, std::string* meta) {
  meta->clear();
}

Status DecodeMeta(std::string_view meta, GetModule* out) {
  return DecodeEmpty(meta, TypeOf(*out));
}

void EncodeMeta(const ShmOffer& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.host);
}

Status DecodeMeta(std::string_view meta, ShmOffer* out) {
  return DecodeString(meta, TypeOf(*out), "host", &out->host);
}

void EncodeMeta(const ShmTicket& m, std::string* meta) {
  meta->clear();
  MetaWriter w(meta);
  w.Str(m.socket_name);
  w.Str(m.cookie);
  w.Str(m.refusal);
}

Status DecodeMeta(std::string_view meta, ShmTicket* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  PS_RETURN_IF_ERROR(r.Str("socket_name", &out->socket_name));
  PS_RETURN_IF_ERROR(r.Str("cookie", &out->cookie));
  PS_RETURN_IF_ERROR(r.Str("refusal", &out->refusal));
  PS_RETURN_IF_ERROR(r.Finish());
  const bool granted = out->refusal.empty();
  if (granted &&
      (out->socket_name.empty() || out->cookie.size() != kShmCookieChars ||
       out->cookie.find_first_not_of("0123456789abcdef") !=
           std::string::npos)) {
    return Corruption(
        "shm_ticket: a ticket needs a socket name and a cookie "
        "of 32 hex digits");
  }
  return Status::Ok();
}

}  // namespace pstrain::wire
