#pragma once
// The dashboard page: one HTML document that draws a run's curves with
// dygraphs (Debian's libjs-dygraphs). Two forms of the same page: the
// report, self-contained (dygraphs and the runs' events inlined, nothing
// fetched: a file one can mail), and the live page, which loads dygraphs
// from the server that serves it and polls that server's /api/events.
// The page's own HTML, JS and CSS (lib/dashboard/dashboard.*) are compiled
// into the binary. What each chart shows: share/doc/dashboard.md.
// Functions only; each is thread-safe.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dashboard/run_events.h"
#include "util/result.h"

namespace pstrain::dashboard {

struct PageOptions {
  /// Where libjs-dygraphs installs dygraph.min.js and dygraph.min.css.
  /// Default: /usr/share/javascript/dygraphs.
  std::string dygraphs_dir = "/usr/share/javascript/dygraphs";
  /// The page's title (HTML-escaped here). Default: "pstrain".
  std::string title = "pstrain";
};

/// Reads `name` (dygraph.min.js or dygraph.min.css) from
/// options.dygraphs_dir. Returns kNotFound naming the file and the package
/// libjs-dygraphs when it cannot be read.
Result<std::string> ReadDygraphsFile(const PageOptions& options,
                                     const std::string& name);

/// The data the page draws: {"runs":[{"name": ..., "events": [...]}]}.
nlohmann::json RunsJson(const std::vector<Run>& runs);

/// `json_text` made safe inside an HTML <script> element: every '<' becomes
/// the JSON escape \u003c, so that no "</script>" or "<!--" in a string can
/// end or change the element. REQUIRES: json_text is JSON ('<' occurs only
/// inside strings).
std::string EscapeJsonForScript(const std::string& json_text);

/// `text` with & < > " ' as HTML character references.
std::string EscapeHtml(const std::string& text);

/// The self-contained report of `runs`: dygraphs' JS and CSS read from
/// options.dygraphs_dir and inlined, the runs' events embedded as JSON.
/// Runs of the same name are renamed "name (2)", ... Returns kNotFound as
/// ReadDygraphsFile, and kInvalidArgument when `runs` is empty.
Result<std::string> ReportPage(std::vector<Run> runs,
                               const PageOptions& options);

/// The live page: it loads /dygraph.min.js and /dygraph.min.css from the
/// server that serves it and polls `events_url` every `poll_ms` ms for
/// RunsJson's object, redrawing its charts in place. Reads no file.
std::string LivePage(const PageOptions& options,
                     const std::string& events_url = "/api/events",
                     int poll_ms = 1000);

}  // namespace pstrain::dashboard
