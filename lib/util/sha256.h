#pragma once
// SHA-256 (FIPS 180-4) of a byte string, by OpenSSL: what names a job's
// TorchScript module (--model PATH) at the handshake and in checkpoints.
// Free functions; thread-safe.

#include <string>
#include <string_view>

namespace pstrain {

/// The SHA-256 of `bytes` as 64 lowercase hex digits, as `sha256sum`
/// prints it.
std::string Sha256Hex(std::string_view bytes);

/// Whether `text` looks like Sha256Hex's output: 64 of [0-9a-f].
bool IsSha256Hex(std::string_view text);

}  // namespace pstrain
