#pragma once
// Token authentication (--auth_token_file): the HMAC-SHA256 challenge and
// response of share/doc/wire-format.md, "Authentication". Every process of
// a job reads the same token file; a connection proves knowledge of the
// token in both directions, and the token never travels. Crypto is
// OpenSSL's (HMAC, RAND_bytes, CRYPTO_memcmp), never hand-written.
// Functions are thread-safe.

#include <chrono>
#include <string>
#include <string_view>

#include "util/result.h"
#include "util/status.h"

namespace pstrain::net {

class Client;

/// Labels that make the two directions' proofs differ.
inline constexpr std::string_view kServerProofLabel = "pstrain server";
inline constexpr std::string_view kClientProofLabel = "pstrain client";

/// The token in file `path`: its bytes, less trailing newlines and carriage
/// returns. kInvalidArgument naming the file when it cannot be read or holds
/// no token.
Result<std::string> ReadAuthToken(const std::string& path);

/// wire::kAuthBytes (32) random bytes from OpenSSL's RAND_bytes.
/// PS_CHECK-fails if the system has no entropy (nothing can go on safely).
std::string NewNonce();

/// HMAC-SHA256 keyed with `token` over label || a || b: 32 bytes.
std::string AuthProof(std::string_view token, std::string_view label,
                      std::string_view a, std::string_view b);

/// Whether two proofs are equal, in time that does not depend on where
/// they differ (CRYPTO_memcmp). Different sizes are unequal.
bool ProofsEqual(std::string_view a, std::string_view b);

/// The client's half: sends auth_hello, checks the server's proof, sends
/// its own and waits for the ack, each reply within `timeout`. Errors:
/// kInvalidArgument "the server could not prove it knows the auth token
/// (--auth_token_file)" for an
/// impostor, or the server's error ("authentication failed") as sent.
/// REQUIRES: `*client` connected, nothing else sent yet.
Status Authenticate(Client* client, std::string_view token,
                    std::chrono::milliseconds timeout);

}  // namespace pstrain::net
