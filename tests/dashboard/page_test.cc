#include "dashboard/page.h"

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "testing/idx_files.h"

namespace pstrain::dashboard {
namespace {

using data::testing::ScratchDir;
using nlohmann::json;

Run SmallRun(const std::string& name) {
  Run run;
  run.name = name;
  run.events.push_back({{"event", "step"},
                        {"rank", 1},
                        {"role", "worker"},
                        {"time", 1.5},
                        {"loss", 0.25}});
  return run;
}

// A dygraphs folder with stand-in files, so that the test reads no package.
class PageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_.File("dygraph.min.js")) << "var Dygraph = 'JS-MARK';";
    std::ofstream(dir_.File("dygraph.min.css")) << ".dygraph-title{}";
    options_.dygraphs_dir = dir_.path();
  }

  // The text of the <script> element whose opening tag is `open`.
  static std::string ScriptText(const std::string& html,
                                const std::string& open) {
    const size_t start = html.find(open);
    EXPECT_NE(start, std::string::npos) << open;
    if (start == std::string::npos)
      return "";
    const size_t end = html.find("</script>", start);
    return html.substr(start + open.size(), end - start - open.size());
  }

  ScratchDir dir_;
  PageOptions options_;
};

const char kDataOpen[] =
    "<script id=\"pstrain-data\" type=\"application/json\">";

TEST_F(PageTest, ReportInlinesDygraphsAndTheRunsData) {
  auto page = ReportPage({SmallRun("sync"), SmallRun("async")}, options_);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_NE(page->find("var Dygraph = 'JS-MARK';"), std::string::npos);
  EXPECT_NE(page->find(".dygraph-title{}"), std::string::npos);
  EXPECT_EQ(page->find("src=\"/dygraph.min.js\""), std::string::npos);
  EXPECT_NE(page->find("id=\"drawn\""), std::string::npos);
  EXPECT_NE(page->find("id=\"loss\""), std::string::npos);
  EXPECT_NE(page->find("updateOptions"), std::string::npos);  // our JS
  for (const char* hole : {"@DATA@", "@TITLE@", "@DASHBOARD_JS@"})
    EXPECT_EQ(page->find(hole), std::string::npos) << hole;
  const json data = json::parse(ScriptText(*page, kDataOpen));
  ASSERT_EQ(data["runs"].size(), 2u);
  EXPECT_EQ(data["runs"][1]["name"], "async");
  EXPECT_EQ(data["runs"][0]["events"][0]["loss"], 0.25);
}

TEST_F(PageTest, AScriptEndInAStringCannotEndTheDataElement) {
  dashboard::Run run = SmallRun("evil</script><script>alert(1)</script>");
  run.events[0]["note"] = "<!-- <script>";
  auto page = ReportPage({run}, options_);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  const std::string text = ScriptText(*page, kDataOpen);
  EXPECT_EQ(text.find('<'), std::string::npos);
  const json data = json::parse(text);  // the element holds all the JSON
  EXPECT_EQ(data["runs"][0]["name"], run.name);
  EXPECT_EQ(data["runs"][0]["events"][0]["note"], "<!-- <script>");
  EXPECT_EQ(EscapeJsonForScript("\"</script>\""), "\"\\u003c/script>\"");
}

TEST_F(PageTest, RunsOfTheSameNameAreNumbered) {
  auto page = ReportPage({SmallRun("run"), SmallRun("run")}, options_);
  ASSERT_TRUE(page.ok());
  const json data = json::parse(ScriptText(*page, kDataOpen));
  EXPECT_EQ(data["runs"][0]["name"], "run");
  EXPECT_EQ(data["runs"][1]["name"], "run (2)");
}

TEST_F(PageTest, MissingDygraphsNamesTheFileAndThePackage) {
  options_.dygraphs_dir = dir_.File("absent");
  auto page = ReportPage({SmallRun("a")}, options_);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kNotFound);
  EXPECT_NE(page.status().message().find(dir_.File("absent/dygraph.min.js")),
            std::string::npos);
  EXPECT_NE(page.status().message().find("libjs-dygraphs"), std::string::npos);
}

TEST_F(PageTest, ReportNeedsARun) {
  auto page = ReportPage({}, options_);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PageTest, DygraphsThatWouldEndItsScriptIsRefused) {
  std::ofstream(dir_.File("dygraph.min.js")) << "x = '</SCRIPT>';";
  auto page = ReportPage({SmallRun("a")}, options_);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PageTest, LivePageLoadsDygraphsFromTheServerAndPolls) {
  options_.title = "pstrain <live>";
  const std::string page = LivePage(options_, "/api/events", 1000);
  EXPECT_NE(page.find("<script src=\"/dygraph.min.js\"></script>"),
            std::string::npos);
  EXPECT_NE(page.find("href=\"/dygraph.min.css\""), std::string::npos);
  EXPECT_EQ(page.find("JS-MARK"), std::string::npos);
  EXPECT_EQ(page.find(kDataOpen), std::string::npos);
  EXPECT_NE(page.find("<title>pstrain &lt;live&gt;</title>"),
            std::string::npos);
  const json live = json::parse(ScriptText(
      page, "<script id=\"pstrain-live\" type=\"application/json\">"));
  EXPECT_EQ(live, json({{"url", "/api/events"}, {"poll_ms", 1000}}));
}

TEST(PageEscapeTest, EscapesHtml) {
  EXPECT_EQ(EscapeHtml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

}  // namespace
}  // namespace pstrain::dashboard
