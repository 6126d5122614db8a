#include "report/event_log.h"

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::report {
namespace {

using nlohmann::json;

std::vector<std::string> Lines(const std::ostringstream& stream) {
  std::vector<std::string> lines;
  std::istringstream in(stream.str());
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

double Now() {
  auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(since_epoch).count();
}

class EventLogTest : public ::testing::Test {
 protected:
  EventLogOptions Options(bool json, bool quiet = false) {
    EventLogOptions options;
    options.json = json;
    options.quiet = quiet;
    options.rank = 2;
    options.role = "worker";
    options.out = &out_;
    options.err = &err_;
    return options;
  }

  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(EventLogTest, JsonLineCarriesEnvelopeThenFields) {
  EventLog log(Options(/*json=*/true));
  double before = Now();
  log.Emit("step", {{"step", 5}, {"loss", 0.5}});
  double after = Now();

  std::vector<std::string> lines = Lines(out_);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(
      lines[0].rfind(R"({"event":"step","rank":2,"role":"worker","time":)", 0),
      0u)
      << lines[0];
  json parsed = json::parse(lines[0]);
  EXPECT_EQ(parsed["event"], "step");
  EXPECT_EQ(parsed["rank"], 2);
  EXPECT_EQ(parsed["role"], "worker");
  ASSERT_TRUE(parsed["time"].is_number_float());
  EXPECT_GE(parsed["time"].get<double>(), before - 1e-3);
  EXPECT_LE(parsed["time"].get<double>(), after + 1e-3);
  EXPECT_EQ(parsed["step"], 5);
  EXPECT_EQ(parsed["loss"], 0.5);
  EXPECT_EQ(err_.str(), "pstrain rank 2 (worker): step 5 loss 0.5000\n");
}

TEST_F(EventLogTest, OneJsonLinePerEvent) {
  EventLog log(Options(/*json=*/true));
  log.Emit("listen", {{"port", 29500}});
  log.Emit("step", json::object());
  log.Emit("summary", json());
  std::vector<std::string> lines = Lines(out_);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(json::parse(lines[0])["event"], "listen");
  EXPECT_EQ(json::parse(lines[1])["event"], "step");
  EXPECT_EQ(json::parse(lines[2])["event"], "summary");
  EXPECT_EQ(Lines(err_).size(), 3u);
}

TEST_F(EventLogTest, WithoutJsonOnlyHumanLines) {
  EventLog log(Options(/*json=*/false));
  log.Emit("eval", {{"step", 9}, {"test_accuracy", 0.5}});
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(),
            "pstrain rank 2 (worker): eval step 9: test accuracy 0.5000\n");
}

TEST_F(EventLogTest, InfoIsHumanOnly) {
  EventLog log(Options(/*json=*/true));
  log.Info("connected to localhost:29500");
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(),
            "pstrain rank 2 (worker): connected to localhost:29500\n");
}

TEST_F(EventLogTest, WithoutRoleThePrefixIsTheProgramName) {
  EventLogOptions options = Options(/*json=*/false);
  options.role = "";
  EventLog log(options);
  log.Info("hello");
  EXPECT_EQ(err_.str(), "pstrain: hello\n");
}

TEST_F(EventLogTest, QuietKeepsJsonAndErrorsOnly) {
  EventLog log(Options(/*json=*/true, /*quiet=*/true));
  log.Emit("step", {{"step", 1}});
  log.Info("ignored");
  EXPECT_EQ(err_.str(), "");
  log.Error("cannot reach rank 0", 1);
  EXPECT_EQ(err_.str(), "pstrain: error: cannot reach rank 0\n");
  std::vector<std::string> lines = Lines(out_);
  ASSERT_EQ(lines.size(), 2u);
  json error = json::parse(lines[1]);
  EXPECT_EQ(error["event"], "error");
  EXPECT_EQ(error["message"], "cannot reach rank 0");
  EXPECT_EQ(error["exit_status"], 1);
}

TEST_F(EventLogTest, InvalidUtf8IsReplacedNotThrown) {
  EventLog log(Options(/*json=*/true));
  log.Emit("listen", {{"host", std::string("a\xff"
                                           "b")}});
  json parsed = json::parse(Lines(out_).at(0));
  EXPECT_EQ(parsed["host"],
            "a\xEF\xBF\xBD"
            "b");
}

TEST_F(EventLogTest, ConcurrentEmitsWriteWholeLines) {
  EventLog log(Options(/*json=*/true));
  constexpr int kThreads = 4;
  constexpr int kEvents = 300;
  const std::string padding(500, 'x');
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEvents; ++i) {
        log.Emit("step", {{"step", i}, {"thread", t}, {"pad", padding}});
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();

  std::vector<std::string> lines = Lines(out_);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kEvents));
  std::vector<int> next(kThreads, 0);
  for (const std::string& line : lines) {
    json parsed = json::parse(line);  // throws on a torn line
    int t = parsed["thread"];
    EXPECT_EQ(parsed["step"], next[t]++);
    EXPECT_EQ(parsed["pad"], padding);
  }
  std::vector<std::string> human = Lines(err_);
  ASSERT_EQ(human.size(), static_cast<size_t>(kThreads * kEvents));
  for (const std::string& line : human) {
    ASSERT_EQ(line.rfind("pstrain rank 2 (worker): step ", 0), 0u) << line;
    ASSERT_NE(line.find(" pad=" + padding + " thread="), std::string::npos);
  }
}

TEST_F(EventLogTest, ReservedFieldIsAProgrammerError) {
  EventLog log(Options(/*json=*/true));
  EXPECT_DEATH(log.Emit("step", {{"rank", 3}}), "reserved field rank");
}

}  // namespace
// On a terminal (live_width), a single serve or work draws one row: step
// events redraw a progress bar in place, other lines print above it, and
// the summary replaces the bar.
TEST(EventLogLiveTest, TerminalRedrawsOneRowInPlace) {
  std::ostringstream out, err;
  EventLogOptions o;
  o.rank = 1;
  o.role = "worker";
  o.out = &out;
  o.err = &err;
  o.live_width = 100;
  EventLog log(o);
  log.Emit("step", {{"step", 10},
                    {"total_steps", 40},
                    {"loss", 0.5},
                    {"samples_per_second", 100.0}});
  log.Emit("step", {{"step", 20},
                    {"total_steps", 40},
                    {"loss", 0.25},
                    {"samples_per_second", 100.0}});
  log.Info("rank 2 joined");
  log.Emit("summary", {{"steps", 40}, {"samples", 1280}});
  const std::string text = err.str();
  EXPECT_NE(text.find("[rank 1] [##"), std::string::npos) << text;
  EXPECT_NE(text.find("20/40 loss 0.2500"), std::string::npos) << text;
  // Every redraw moves up over the one row drawn before: three of them.
  size_t ups = 0;
  for (size_t at = 0;
       (at = text.find("\r\033[1A\033[J", at)) != std::string::npos; ++at)
    ++ups;
  EXPECT_EQ(ups, 3u) << text;
  EXPECT_NE(text.find("[rank 1] rank 2 joined\n"), std::string::npos) << text;
  const std::string last = text.substr(text.rfind("\033[J") + 3);
  EXPECT_EQ(last.rfind("[rank 1] done", 0), 0u) << last;
  EXPECT_EQ(out.str(), "");  // no --json
}

}  // namespace pstrain::report
