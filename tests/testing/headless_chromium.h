#pragma once
// Headless Chromium (Debian's `chromium`, installed by
// share/scripts/install-deps.sh --test) for tests of pstrain's web pages:
// it loads a page, runs its scripts and gives back the DOM they left.
// Each call starts its own browser with its own profile folder, so calls
// from tests that run at the same time do not meet. Thread-safe.

#include <string>

#include "util/result.h"

namespace pstrain::testing {

/// /usr/bin/chromium.
std::string ChromiumBin();

/// Loads `url` (file:///... or http://127.0.0.1:PORT/...) in headless
/// Chromium, lets its scripts run for `virtual_time_ms` of virtual time
/// (timers fire at once; network waits still take real time) and returns
/// the serialized DOM (--dump-dom). Returns kIOError with Chromium's exit
/// status and the end of its stderr when it fails or runs past
/// `timeout_seconds`.
Result<std::string> DumpDom(const std::string& url, int virtual_time_ms,
                            double timeout_seconds = 120);

/// The text of the first element of `html` whose id is `id`, its character
/// references &amp; &lt; &gt; &quot; decoded; "" when there is none.
/// REQUIRES: the element holds text only (like <pre id="drawn">).
std::string ElementText(const std::string& html, const std::string& id);

}  // namespace pstrain::testing
