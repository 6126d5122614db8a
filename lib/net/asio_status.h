#pragma once
// Asio's errors as pstrain's Status. Stateless; thread-safe.

#include <string>
#include <system_error>

#include "util/status.h"

namespace pstrain::net {

/// Converts an Asio error to a Status: kUnavailable for a peer that went
/// away (EOF, reset, refused), kIOError otherwise; `what` names the action.
Status FromAsioError(const std::error_code& ec, const std::string& what);

}  // namespace pstrain::net
