#pragma once
// Transport: how a connection's frames travel once it is up. Every
// connection starts on TCP (the handshake, authentication and hello); a
// worker and a server on one host may then move their frames into shared
// memory (net/shm_stream.h), where nothing passes through the kernel's
// TCP stack. Everything above the bytes (frames, validation, the message
// table, auth, codecs) is the same on both (share/doc/design.md,
// "Transports").

#include <cstdint>
#include <string>

#include "util/result.h"

namespace pstrain::net {

enum class Transport {
  kAuto,  // shared memory where both ends share the host, else TCP
  kTcp,   // TCP only
  kShm,   // shared memory; TCP (with a log line) where it cannot be had
};

/// "auto", "tcp", "shm".
const char* TransportName(Transport t);
/// Parses a --transport value; kInvalidArgument "--transport 'x': expected
/// auto, tcp or shm".
Result<Transport> ParseTransport(const std::string& text);

/// What two processes must share to share memory: the boot (the kernel's
/// boot_id), the network namespace (ranks in namespaces of their own are
/// hosts of their own: the abstract socket of the handover would not reach
/// across) and the user id. "" when /proc cannot say, which matches
/// nothing.
std::string HostIdentity();

/// TCP_NOTSENT_LOWAT of socket `fd`, `bytes` clamped to what an int
/// holds: the socket reports itself writable only while fewer bytes are
/// unsent. False, with nothing set, for 0 bytes or when the kernel refuses.
bool SetNotSentLowat(int fd, uint64_t bytes);

}  // namespace pstrain::net
