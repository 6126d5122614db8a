#include "testing/headless_chromium.h"

#include <stdlib.h>

#include <filesystem>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "testing/process.h"

namespace pstrain::testing {

namespace {

// "&amp;" and friends of `text` as characters.
std::string DecodeEntities(const std::string& text) {
  static const std::pair<const char*, char> kEntities[] = {{"&lt;", '<'},
                                                           {"&gt;", '>'},
                                                           {"&quot;", '"'},
                                                           {"&#39;", '\''},
                                                           {"&amp;", '&'}};
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool decoded = false;
    for (const auto& [name, c] : kEntities) {
      const std::string entity = name;
      if (text.compare(i, entity.size(), entity) == 0) {
        out += c;
        i += entity.size();
        decoded = true;
        break;
      }
    }
    if (!decoded)
      out += text[i++];
  }
  return out;
}

}  // namespace

std::string ChromiumBin() {
  return "/usr/bin/chromium";
}

Result<std::string> DumpDom(const std::string& url, int virtual_time_ms,
                            double timeout_seconds) {
  std::string profile = ::testing::TempDir() + "pstrain_chromium_XXXXXX";
  if (::mkdtemp(profile.data()) == nullptr)
    return IOError("cannot make a profile folder under " +
                   ::testing::TempDir());
  Process chromium({ChromiumBin(), "--headless", "--no-sandbox",
                    "--disable-gpu", "--no-first-run",
                    "--disable-dev-shm-usage", "--user-data-dir=" + profile,
                    "--virtual-time-budget=" + std::to_string(virtual_time_ms),
                    "--dump-dom", url});
  ProcessResult r = chromium.Wait(timeout_seconds);
  std::error_code ec;
  std::filesystem::remove_all(profile, ec);
  if (r.exit_code != 0 || r.timed_out || r.out.empty()) {
    const std::string tail =
        r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err;
    return IOError("chromium --dump-dom " + url + ": exit status " +
                   std::to_string(r.exit_code) +
                   (r.timed_out ? " (timed out)" : "") + "; stderr: " + tail);
  }
  return r.out;
}

std::string ElementText(const std::string& html, const std::string& id) {
  const size_t at = html.find("id=\"" + id + "\"");
  if (at == std::string::npos)
    return "";
  const size_t open = html.find('>', at);
  const size_t close = html.find('<', open);
  if (open == std::string::npos || close == std::string::npos)
    return "";
  return DecodeEntities(html.substr(open + 1, close - open - 1));
}

}  // namespace pstrain::testing
