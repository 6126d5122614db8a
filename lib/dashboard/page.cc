#include "dashboard/page.h"

#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "dashboard/page_assets.h"
#include "util/check.h"

namespace pstrain::dashboard {

namespace {

// kDashboardHtml with each @NAME@ replaced by values[NAME], in one pass:
// text put in is never searched again. REQUIRES: every placeholder named.
std::string FillTemplate(const std::map<std::string, std::string>& values) {
  const std::string html = kDashboardHtml;
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t open = html.find('@', pos);
    const size_t close =
        open == std::string::npos ? open : html.find('@', open + 1);
    if (close == std::string::npos) {
      out.append(html, pos, std::string::npos);
      return out;
    }
    auto it = values.find(html.substr(open + 1, close - open - 1));
    if (it == values.end()) {  // a lone '@' of the page's text
      out.append(html, pos, close - pos);
      pos = close;
      continue;
    }
    out.append(html, pos, open - pos);
    out += it->second;
    pos = close + 1;
  }
}

// The placeholders both forms fill alike.
std::map<std::string, std::string> CommonValues(const PageOptions& options) {
  return {{"TITLE", EscapeHtml(options.title)},
          {"DASHBOARD_CSS", kDashboardCss},
          {"DASHBOARD_JS", kDashboardJs}};
}

// A <script> element that holds `json` as data.
std::string JsonScript(const std::string& id, const nlohmann::json& json) {
  return "<script id=\"" + id + "\" type=\"application/json\">" +
         EscapeJsonForScript(json.dump()) + "</script>";
}

// Whether `text` holds "</script" in any case, which would end the inline
// element that holds it.
bool EndsScript(const std::string& text) {
  std::string lower = text;
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("</script") != std::string::npos;
}

// Renames runs that share a name: "name (2)", "name (3)", ...
void MakeNamesUnique(std::vector<Run>* runs) {
  std::set<std::string> taken;
  for (Run& run : *runs) {
    std::string name = run.name;
    for (int n = 2; taken.count(name) > 0; ++n)
      name = run.name + " (" + std::to_string(n) + ")";
    run.name = name;
    taken.insert(name);
  }
}

}  // namespace

Result<std::string> ReadDygraphsFile(const PageOptions& options,
                                     const std::string& name) {
  const std::string path = options.dygraphs_dir + "/" + name;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    return NotFound(path +
                    ": cannot read it (install Debian's libjs-dygraphs, or "
                    "name its folder with --dygraphs_dir)");
  }
  return text.str();
}

nlohmann::json RunsJson(const std::vector<Run>& runs) {
  nlohmann::json list = nlohmann::json::array();
  for (const Run& run : runs)
    list.push_back({{"name", run.name}, {"events", run.events}});
  return {{"runs", std::move(list)}};
}

std::string EscapeJsonForScript(const std::string& json_text) {
  std::string out;
  out.reserve(json_text.size());
  for (char c : json_text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

std::string EscapeHtml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Result<std::string> ReportPage(std::vector<Run> runs,
                               const PageOptions& options) {
  if (runs.empty())
    return InvalidArgument("a report needs at least one run");
  PS_ASSIGN_OR_RETURN(std::string js,
                      ReadDygraphsFile(options, "dygraph.min.js"));
  PS_ASSIGN_OR_RETURN(std::string css,
                      ReadDygraphsFile(options, "dygraph.min.css"));
  if (EndsScript(js) || EndsScript(css)) {
    return InvalidArgument(options.dygraphs_dir +
                           "/dygraph.min.*: holds \"</script\", which "
                           "cannot be inlined in the report");
  }
  MakeNamesUnique(&runs);
  auto values = CommonValues(options);
  values["DYGRAPHS_CSS"] = "<style>\n" + css + "\n</style>";
  values["DYGRAPHS_JS"] = "<script>\n" + js + "\n</script>";
  values["DATA"] = JsonScript("pstrain-data", RunsJson(runs));
  return FillTemplate(values);
}

std::string LivePage(const PageOptions& options, const std::string& events_url,
                     int poll_ms) {
  auto values = CommonValues(options);
  values["DYGRAPHS_CSS"] =
      "<link rel=\"stylesheet\" href=\"/dygraph.min.css\">";
  values["DYGRAPHS_JS"] = "<script src=\"/dygraph.min.js\"></script>";
  values["DATA"] =
      JsonScript("pstrain-live", {{"url", events_url}, {"poll_ms", poll_ms}});
  return FillTemplate(values);
}

}  // namespace pstrain::dashboard
