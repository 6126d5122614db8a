// The auth messages' codecs (auth_hello, challenge, auth): their layouts
// are in messages.h, the exchange in share/doc/wire-format.md,
// "Authentication".

#include "wire/messages.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {

using internal::MetaReader;
using internal::MetaWriter;

void EncodeMeta(const AuthHello& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.nonce);
}

void EncodeMeta(const Challenge& m, std::string* meta) {
  meta->clear();
  MetaWriter w(meta);
  w.Str(m.nonce);
  w.Str(m.proof);
}

void EncodeMeta(const Auth& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.proof);
}

namespace {

// One nonce or proof: a str of exactly kAuthBytes (checked before it grows
// *out, so an unauthenticated peer cannot make us allocate).
Status AuthField(MetaReader& r, const char* field, std::string* out) {
  uint32_t len = 0;
  MetaReader peek = r;
  PS_RETURN_IF_ERROR(peek.U32(field, &len));
  if (len != kAuthBytes) {
    return r.Error(std::string(field) + " of " + std::to_string(len) +
                   " bytes, expected " + std::to_string(kAuthBytes));
  }
  return r.Str(field, out);
}

}  // namespace

Status DecodeMeta(std::string_view meta, AuthHello* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  PS_RETURN_IF_ERROR(AuthField(r, "nonce", &out->nonce));
  return r.Finish();
}

Status DecodeMeta(std::string_view meta, Challenge* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  PS_RETURN_IF_ERROR(AuthField(r, "nonce", &out->nonce));
  PS_RETURN_IF_ERROR(AuthField(r, "proof", &out->proof));
  return r.Finish();
}

Status DecodeMeta(std::string_view meta, Auth* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  PS_RETURN_IF_ERROR(AuthField(r, "proof", &out->proof));
  return r.Finish();
}

}  // namespace pstrain::wire
