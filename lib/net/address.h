#pragma once
// "host:port" addresses as servers announce them (wire::ServerInfo).
// Stateless; thread-safe.

#include <string>

#include "util/status.h"

namespace pstrain::net {

/// Splits "host:port" (the host may hold colons: an IPv6 address) into
/// *host and *port (1..65535). kCorruption "server address 'x': expected
/// host:port" otherwise: the address came from a peer.
Status SplitAddress(const std::string& address, std::string* host, int* port);

}  // namespace pstrain::net
