#include "net/auth_gate.h"

#include "net/auth.h"
#include "wire/messages.h"

namespace pstrain::net {
namespace {

// The auth messages are 36 to 76 bytes of body; nothing larger is read
// from a peer that has not proven anything.
constexpr uint64_t kMaxAuthFrameBytes = 1024;

}  // namespace

AuthGate::AuthGate(std::string token)
    : token_(std::move(token)),
      state_(token_.empty() ? State::kOpen : State::kAwaitHello) {}

Status AuthGate::CheckFrame(wire::MsgType type, uint64_t body_len,
                            uint64_t data_bytes) const {
  const wire::MsgType want = state_ == State::kAwaitHello
                                 ? wire::MsgType::kAuthHello
                                 : wire::MsgType::kAuth;
  if (type != want) {
    return InvalidArgument(std::string("authentication required: expected ") +
                           wire::MsgTypeName(want) +
                           (state_ == State::kAwaitHello ? " first" : "") +
                           ", got " + wire::MsgTypeName(type));
  }
  if (body_len > kMaxAuthFrameBytes || data_bytes != 0) {
    return InvalidArgument(std::string(wire::MsgTypeName(type)) + " of " +
                           std::to_string(body_len) +
                           " bytes, expected at most " +
                           std::to_string(kMaxAuthFrameBytes));
  }
  return Status::Ok();
}

Status AuthGate::OnFrame(wire::MsgType type, std::string_view meta,
                         wire::MsgType* reply_type, std::string* reply_meta) {
  PS_RETURN_IF_ERROR(CheckFrame(type, 0, 0));
  if (state_ == State::kAwaitHello) {
    wire::AuthHello hello;
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &hello));
    client_nonce_ = hello.nonce;
    server_nonce_ = NewNonce();
    wire::Challenge challenge{
        server_nonce_,
        AuthProof(token_, kServerProofLabel, client_nonce_, server_nonce_)};
    wire::EncodeMeta(challenge, reply_meta);
    *reply_type = wire::MsgType::kChallenge;
    state_ = State::kAwaitProof;
    return Status::Ok();
  }
  wire::Auth auth;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &auth));
  const std::string want =
      AuthProof(token_, kClientProofLabel, server_nonce_, client_nonce_);
  if (!ProofsEqual(auth.proof, want)) {
    return InvalidArgument(
        "authentication failed: wrong proof of the auth token");
  }
  state_ = State::kOpen;
  reply_meta->clear();
  *reply_type = wire::MsgType::kAck;
  return Status::Ok();
}

}  // namespace pstrain::net
