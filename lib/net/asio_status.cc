#include "net/asio_status.h"

#include <asio/error.hpp>

namespace pstrain::net {

Status FromAsioError(const std::error_code& ec, const std::string& what) {
  if (ec == asio::error::eof || ec == asio::error::connection_reset ||
      ec == asio::error::connection_refused ||
      ec == asio::error::connection_aborted || ec == asio::error::broken_pipe) {
    return Unavailable(what + ": " + ec.message());
  }
  return IOError(what + ": " + ec.message());
}

}  // namespace pstrain::net
