#pragma once
// "host:port" addresses as servers announce them (wire::ServerInfo), and
// as a socket's peer is named in messages. Stateless; thread-safe.

#include <string>

#include <asio/ip/tcp.hpp>

#include "util/status.h"

namespace pstrain::net {

/// Splits "host:port" (the host may hold colons: an IPv6 address) into
/// *host and *port (1..65535). kCorruption "server address 'x': expected
/// host:port" otherwise: the address came from a peer.
Status SplitAddress(const std::string& address, std::string* host, int* port);

/// The peer of `socket` as "127.0.0.1:53124"; "?" when it has none (closed,
/// or never connected).
std::string RemoteAddressOf(const asio::ip::tcp::socket& socket);

}  // namespace pstrain::net
