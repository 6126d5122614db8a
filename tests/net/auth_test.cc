#include "net/auth.h"

#include <gtest/gtest.h>

#include "net/auth_gate.h"
#include "wire/messages.h"

namespace pstrain::net {
namespace {

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// RFC 4231, test case 2: HMAC-SHA256 with key "Jefe".
TEST(AuthTest, ProofIsHmacSha256OfLabelAndNonces) {
  EXPECT_EQ(Hex(AuthProof("Jefe", "what do ya ", "want for ", "nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(AuthTest, NoncesAreFreshAndProofsCompareExactly) {
  const std::string a = NewNonce(), b = NewNonce();
  EXPECT_EQ(a.size(), wire::kAuthBytes);
  EXPECT_NE(a, b);
  EXPECT_TRUE(ProofsEqual(a, a));
  EXPECT_FALSE(ProofsEqual(a, b));
  EXPECT_FALSE(ProofsEqual(a, a.substr(1)));
}

// Plays the client against a gate: `token` is what the client believes.
Status RunExchange(AuthGate* gate, const std::string& token) {
  wire::MsgType type = wire::MsgType::kAck;
  std::string reply;
  const std::string mine = NewNonce();
  std::string meta;
  wire::EncodeMeta(wire::AuthHello{mine}, &meta);
  PS_RETURN_IF_ERROR(
      gate->CheckFrame(wire::MsgType::kAuthHello, 4 + meta.size(), 0));
  PS_RETURN_IF_ERROR(
      gate->OnFrame(wire::MsgType::kAuthHello, meta, &type, &reply));
  EXPECT_EQ(type, wire::MsgType::kChallenge);
  EXPECT_FALSE(gate->open());
  wire::Challenge challenge;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(reply, &challenge));
  wire::EncodeMeta(
      wire::Auth{AuthProof(token, kClientProofLabel, challenge.nonce, mine)},
      &meta);
  PS_RETURN_IF_ERROR(gate->OnFrame(wire::MsgType::kAuth, meta, &type, &reply));
  EXPECT_EQ(type, wire::MsgType::kAck);
  return Status::Ok();
}

TEST(AuthGateTest, OpensOnlyForTheRightToken) {
  AuthGate right("s3cret");
  EXPECT_TRUE(RunExchange(&right, "s3cret").ok());
  EXPECT_TRUE(right.open());

  AuthGate wrong("s3cret");
  Status s = RunExchange(&wrong, "guess");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "authentication failed: wrong proof of the auth token");
  EXPECT_FALSE(wrong.open());
}

TEST(AuthGateTest, AdmitsNothingButTheExchange) {
  AuthGate gate("s3cret");
  EXPECT_EQ(gate.CheckFrame(wire::MsgType::kHello, 13, 0).message(),
            "authentication required: expected auth_hello first, got hello");
  EXPECT_EQ(gate.CheckFrame(wire::MsgType::kAuth, 40, 0).message(),
            "authentication required: expected auth_hello first, got auth");
  EXPECT_EQ(gate.CheckFrame(wire::MsgType::kAuthHello, 5000, 0).message(),
            "auth_hello of 5000 bytes, expected at most 1024");
  EXPECT_TRUE(AuthGate().open());  // no token, no gate
}

}  // namespace
}  // namespace pstrain::net
