#include "net/auth.h"

#include <fstream>
#include <iterator>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "net/client.h"
#include "util/check.h"
#include "wire/messages.h"

namespace pstrain::net {

Result<std::string> ReadAuthToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgument(
        "--auth_token_file " + path +
        ": cannot read it, expected a file holding the token");
  }
  std::string token((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) {
    token.pop_back();
  }
  if (token.empty()) {
    return InvalidArgument("--auth_token_file " + path +
                           ": empty, expected a token");
  }
  return token;
}

std::string NewNonce() {
  std::string nonce(wire::kAuthBytes, '\0');
  PS_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()),
                      static_cast<int>(nonce.size())) == 1)
      << "RAND_bytes failed: no entropy";
  return nonce;
}

std::string AuthProof(std::string_view token, std::string_view label,
                      std::string_view a, std::string_view b) {
  std::string message;
  message.reserve(label.size() + a.size() + b.size());
  message.append(label).append(a).append(b);
  std::string proof(EVP_MAX_MD_SIZE, '\0');
  unsigned int len = 0;
  PS_CHECK(HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
                reinterpret_cast<const unsigned char*>(message.data()),
                message.size(), reinterpret_cast<unsigned char*>(proof.data()),
                &len) != nullptr)
      << "HMAC-SHA256 failed";
  proof.resize(len);
  return proof;
}

bool ProofsEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

namespace {

// One request of `type` with meta `meta`; the reply must be of `want`.
Status Exchange(Client* client, wire::MsgType type, const std::string& meta,
                wire::MsgType want, std::chrono::milliseconds timeout) {
  FrameBuffers& request = client->NewRequest();
  request.Reset(type, 0, meta);
  wire::MsgType got = wire::MsgType::kAck;
  PS_RETURN_IF_ERROR(client->Call(request, nullptr, timeout, &got));
  if (got != want) {
    return Corruption(std::string("expected ") + wire::MsgTypeName(want) +
                      " during authentication, got " + wire::MsgTypeName(got));
  }
  return Status::Ok();
}

}  // namespace

Status Authenticate(Client* client, std::string_view token,
                    std::chrono::milliseconds timeout) {
  const std::string mine = NewNonce();
  std::string meta;
  wire::EncodeMeta(wire::AuthHello{mine}, &meta);
  PS_RETURN_IF_ERROR(Exchange(client, wire::MsgType::kAuthHello, meta,
                              wire::MsgType::kChallenge, timeout));
  wire::Challenge challenge;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(client->reply_meta(), &challenge));
  if (!ProofsEqual(challenge.proof, AuthProof(token, kServerProofLabel, mine,
                                              challenge.nonce))) {
    client->Close();
    return InvalidArgument(
        "the server could not prove it knows the auth token "
        "(--auth_token_file)");
  }
  wire::EncodeMeta(
      wire::Auth{AuthProof(token, kClientProofLabel, challenge.nonce, mine)},
      &meta);
  return Exchange(client, wire::MsgType::kAuth, meta, wire::MsgType::kAck,
                  timeout);
}

}  // namespace pstrain::net
