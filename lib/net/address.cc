#include "net/address.h"

#include <cstdlib>

namespace pstrain::net {

Status SplitAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  char* end = nullptr;
  const long p = colon == std::string::npos
                     ? -1
                     : std::strtol(address.c_str() + colon + 1, &end, 10);
  if (colon == 0 || p <= 0 || p > 65535 || *end != '\0') {
    return Corruption("server address '" + address + "': expected host:port");
  }
  *host = address.substr(0, colon);
  *port = static_cast<int>(p);
  return Status::Ok();
}

std::string RemoteAddressOf(const asio::ip::tcp::socket& socket) {
  std::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec)
    return "?";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace pstrain::net
