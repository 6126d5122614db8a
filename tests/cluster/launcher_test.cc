// Process tests: real children through /bin/sh. Every child is started and
// reaped by RunChildren itself; the fixture checks that none is left over.

#include "cluster/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::cluster {
namespace {

using Clock = std::chrono::steady_clock;

ChildSpec Sh(const std::string& label, const std::string& script) {
  return ChildSpec{{"/bin/sh", "-c", script}, label};
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// Open descriptors of this process.
int CountOpenFds() {
  int count = 0;
  for (int fd = 0; fd < 1024; ++fd)
    count += fcntl(fd, F_GETFD) != -1;
  return count;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.out = &out_;
    options_.err = &err_;
    open_fds_ = CountOpenFds();
  }

  void TearDown() override {
    // No child of ours is left, running or zombie.
    EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
    EXPECT_EQ(CountOpenFds(), open_fds_);
  }

  // Runs options_ and returns the exit code; fails the test on a Status.
  int Run() {
    Result<int> result = RunChildren(options_);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? *result : -1;
  }

  LaunchOptions options_;
  std::ostringstream out_;
  std::ostringstream err_;
  int open_fds_ = 0;
};

TEST_F(LauncherTest, PrefixesLinesOfBothStreams) {
  options_.children = {Sh("a", "echo one; echo two >&2; printf partial")};
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(out_.str(), "[a] one\n[a] partial\n");
  EXPECT_EQ(err_.str(), "[a] two\n");
}

TEST_F(LauncherTest, LinesWrittenInPiecesStayWhole) {
  const std::string script =
      "i=0; while [ $i -lt 200 ]; do printf 'aaaa'; printf 'bbbb\\n'; "
      "i=$((i+1)); done";
  options_.children = {Sh("c0", script), Sh("c1", script), Sh("c2", script)};
  EXPECT_EQ(Run(), 0);
  std::vector<std::string> lines = Lines(out_.str());
  ASSERT_EQ(lines.size(), 600u);
  const std::regex whole(R"(\[c[012]\] aaaabbbb)");
  for (const std::string& line : lines) {
    ASSERT_TRUE(std::regex_match(line, whole)) << line;
  }
}

TEST_F(LauncherTest, StdoutPassthroughLeavesJsonUntouched) {
  options_.prefix_stdout = false;
  options_.children = {
      Sh("rank 1", R"(echo '{"event":"step"}'; echo warn >&2)")};
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(out_.str(), "{\"event\":\"step\"}\n");
  EXPECT_EQ(err_.str(), "[rank 1] warn\n");
}

TEST_F(LauncherTest, FailingChildStopsTheOthers) {
  options_.children = {Sh("rank 0", "sleep 30"),
                       Sh("rank 1", "sleep 0.2; exit 3"),
                       Sh("rank 2", "sleep 30")};
  Clock::time_point start = Clock::now();
  EXPECT_EQ(Run(), 3);
  EXPECT_LT(SecondsSince(start), 10);
  EXPECT_NE(err_.str().find("pstrain launch: rank 1 exited with status 3; "
                            "stopping the others\n"),
            std::string::npos)
      << err_.str();
}

TEST_F(LauncherTest, ASurvivableChildsDeathStopsNobody) {
  ChildSpec dies = Sh("rank 1", "kill -KILL $$");
  dies.survivable = true;
  options_.children = {Sh("rank 0", "sleep 0.5; echo finished"), dies};
  EXPECT_EQ(Run(), 0);
  EXPECT_NE(out_.str().find("finished"), std::string::npos) << out_.str();
  EXPECT_NE(err_.str().find("pstrain launch: rank 1 was killed by signal 9; "
                            "the others go on\n"),
            std::string::npos)
      << err_.str();
}

// restart_argv (launch --restart_servers): a survivable child that dies
// starts again with those arguments, at most max_restarts times, and its
// lines go on under its label; one that exits 0 does not.
TEST_F(LauncherTest, ASurvivableChildThatDiesStartsAgainAtMostMaxTimes) {
  ChildSpec dies = Sh("rank 1", "echo first; kill -KILL $$");
  dies.survivable = true;
  dies.restart_argv = Sh("", "echo again; kill -KILL $$").argv;
  dies.max_restarts = 2;
  ChildSpec done = Sh("rank 2", "echo once");
  done.survivable = true;
  done.restart_argv = Sh("", "echo never").argv;
  options_.children = {Sh("rank 0", "sleep 1; echo finished"), dies, done};
  EXPECT_EQ(Run(), 0);
  const std::string out = out_.str();
  EXPECT_NE(out.find("[rank 1] first"), std::string::npos) << out;
  size_t again = 0;
  for (size_t at = out.find("[rank 1] again"); at != std::string::npos;
       at = out.find("[rank 1] again", at + 1))
    ++again;
  EXPECT_EQ(again, 2u) << out;
  EXPECT_EQ(out.find("never"), std::string::npos) << out;
  const std::string err = err_.str();
  size_t restarts = 0;
  for (size_t at = err.find("; starting it again"); at != std::string::npos;
       at = err.find("; starting it again", at + 1))
    ++restarts;
  EXPECT_EQ(restarts, 2u) << err;
}

// Once the child that holds the job has exited, one that dies is not
// started again: the job it would rejoin is over. Rank 1 dies only once
// rank 0 has been reaped (its pid is gone), which the launcher does first.
TEST_F(LauncherTest, NoChildStartsAgainOnceTheJobHasEnded) {
  char dir_template[] = "/tmp/launcher_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string pid_file = std::string(dir_template) + "/rank0";
  ChildSpec job = Sh("rank 0", "echo $$ > " + pid_file + ".new; mv " +
                                   pid_file + ".new " + pid_file);
  job.ends_job = true;
  ChildSpec dies =
      Sh("rank 1", "while [ ! -e " + pid_file + " ]; do sleep 0.05; done; " +
                       "while kill -0 $(cat " + pid_file +
                       ") 2>/dev/null; do sleep 0.05; done; kill -KILL $$");
  dies.survivable = true;
  dies.restart_argv = Sh("", "echo again").argv;
  options_.children = {job, dies};
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(),
            "pstrain launch: rank 1 was killed by signal 9; the job is over: "
            "not starting it again\n");
  std::remove(pid_file.c_str());
  rmdir(dir_template);
}

// The master's succession (serve --rdzv_backend launch): when the child
// that holds the job dies, the first of its successors still running is
// named by SIGUSR1 and holds the job from then on; the dead one stops
// nobody. Rank 1, the first successor, died before, so rank 2 is named.
// Each child says it is ready (its trap is set) in a file the next waits
// for, so that no signal comes before the trap on any machine.
TEST_F(LauncherTest, ADeadMasterIsSucceededByItsFirstLiveSuccessor) {
  char dir_template[] = "/tmp/launcher_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  auto wait_for = [&dir](const std::string& name) {
    return "while [ ! -e " + dir + "/" + name + " ]; do sleep 0.05; done; ";
  };
  const std::string pid1 = dir + "/rank1";
  ChildSpec master =
      Sh("rank 0", wait_for("ready2") + wait_for("rank1") +
                       "while kill -0 $(cat " + pid1 +
                       ") 2>/dev/null; do sleep 0.05; done; kill -KILL $$");
  master.ends_job = true;
  master.successors = {1, 2};
  ChildSpec first = Sh("rank 1", "echo $$ > " + pid1 + ".new; mv " + pid1 +
                                     ".new " + pid1 + "; exit 7");
  first.survivable = true;
  // Named, it fails: at most 30 s without the word, then exits 0.
  ChildSpec second =
      Sh("rank 2", "trap 'echo named; exit 3' USR1; touch " + dir +
                       "/ready2; i=0; while [ $i -lt 600 ]; do sleep 0.05; "
                       "i=$((i+1)); done");
  second.survivable = true;
  second.restart_argv = Sh("", "echo again").argv;
  options_.children = {master, first, second};
  // Rank 2, once named, holds the job: its failure is the job's.
  EXPECT_EQ(Run(), 3);
  EXPECT_EQ(out_.str(), "[rank 2] named\n");
  const std::string err = err_.str();
  EXPECT_NE(err.find("pstrain launch: rank 1 exited with status 7; the "
                     "others go on\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("pstrain launch: rank 0 was killed by signal 9; rank 2 "
                     "is the master now\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("pstrain launch: rank 2 exited with status 3; stopping "
                     "the others\n"),
            std::string::npos)
      << err;
  std::remove((dir + "/ready2").c_str());
  std::remove(pid1.c_str());
  rmdir(dir_template);
}

// The successors form a ring: a master that died and started again
// (restart_argv, as a standby) is next in line after the one named in its
// place. Rank 1, named, dies once rank 0 runs again; rank 0 is named.
TEST_F(LauncherTest, ASucceededMasterStartsAgainAndIsNextInLine) {
  char dir_template[] = "/tmp/launcher_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  auto wait_for = [&dir](const std::string& name) {
    return "while [ ! -e " + dir + "/" + name + " ]; do sleep 0.05; done; ";
  };
  const std::string loop =
      "i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done";
  ChildSpec master = Sh("rank 0", wait_for("ready1") + "kill -KILL $$");
  master.ends_job = true;
  master.successors = {1};
  master.restart_argv = Sh("", "trap 'echo named again; exit 0' USR1; touch " +
                                   dir + "/ready0; " + loop)
                            .argv;
  ChildSpec standby = Sh("rank 1", "trap 'echo named; " + wait_for("ready0") +
                                       "kill -KILL $$' USR1; touch " + dir +
                                       "/ready1; " + loop);
  standby.survivable = true;
  options_.children = {master, standby};
  EXPECT_EQ(Run(), 0);  // rank 0, started again, holds the job at its end
  EXPECT_EQ(out_.str(), "[rank 1] named\n[rank 0] named again\n");
  EXPECT_EQ(err_.str(),
            "pstrain launch: rank 0 was killed by signal 9; rank 1 is the "
            "master now; starting rank 0 again\n"
            "pstrain launch: rank 1 was killed by signal 9; rank 0 is the "
            "master now\n");
  for (const char* name : {"/ready0", "/ready1"})
    std::remove((dir + name).c_str());
  rmdir(dir_template);
}

TEST_F(LauncherTest, ChildIgnoringSigtermIsKilledAfterGrace) {
  char dir_template[] = "/tmp/launcher_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string ready = std::string(dir_template) + "/ready";
  options_.kill_grace_seconds = 0.5;
  options_.children = {
      Sh("stubborn", "trap '' TERM; : > " + ready + "; sleep 30"),
      Sh("failing",
         "while [ ! -e " + ready + " ]; do sleep 0.05; done; exit 4")};
  Clock::time_point start = Clock::now();
  EXPECT_EQ(Run(), 4);
  double elapsed = SecondsSince(start);
  EXPECT_GE(elapsed, 0.5);
  EXPECT_LT(elapsed, 10);
  std::remove(ready.c_str());
  rmdir(dir_template);
}

TEST_F(LauncherTest, ChildKilledBySignalGives128PlusSignal) {
  options_.children = {Sh("a", "kill -KILL $$")};
  EXPECT_EQ(Run(), 128 + SIGKILL);
  EXPECT_NE(err_.str().find("pstrain launch: a was killed by signal 9"),
            std::string::npos)
      << err_.str();
}

TEST_F(LauncherTest, MissingExecutableIsAnErrorNotAHang) {
  options_.children = {
      Sh("rank 0", "sleep 30"),
      ChildSpec{{"/nonexistent/pstrain-no-such-binary"}, "rank 1"}};
  Clock::time_point start = Clock::now();
  Result<int> result = RunChildren(options_);
  EXPECT_LT(SecondsSince(start), 10);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kIOError);
  EXPECT_EQ(result.status().message(),
            "cannot start rank 1 (/nonexistent/pstrain-no-such-binary): "
            "No such file or directory");
}

TEST_F(LauncherTest, ForwardsSigintAndRestoresHandler) {
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGINT, nullptr, &before), 0);
  // The child asks its parent (this test) to be interrupted; the launcher
  // forwards the SIGINT back to it, and its trap exits 7.
  options_.children = {
      Sh("a",
         "trap 'exit 7' INT; kill -INT $PPID; i=0; "
         "while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; exit 1")};
  Clock::time_point start = Clock::now();
  EXPECT_EQ(Run(), 7);
  EXPECT_LT(SecondsSince(start), 10);
  struct sigaction after {};
  ASSERT_EQ(sigaction(SIGINT, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

TEST_F(LauncherTest, AllSucceedingGivesZero) {
  options_.children = {Sh("a", "exit 0"), Sh("b", "sleep 0.1")};
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(err_.str(), "");
}

TEST(ThreadsPerProcessTest, SharesCoresAtLeastOneEach) {
  EXPECT_GE(ThreadsPerProcess(1), 1);
  EXPECT_EQ(ThreadsPerProcess(1 << 20), 1);
}

}  // namespace
}  // namespace pstrain::cluster
