// `pstrain launch` on a real terminal (a tmux pane): one live progress bar per
// rank, redrawn in place, ending with each rank's summary.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// tmux on a socket of its own, so that no other tmux server is touched.
class Tmux {
 public:
  explicit Tmux(std::string socket) : socket_(std::move(socket)) {}
  ~Tmux() { Run({"kill-server"}); }
  ProcessResult Run(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/tmux", "-S", socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv);
    return p.Wait(30);
  }
  std::string Capture() {
    return Run({"capture-pane", "-p", "-t", "pstrain"}).out;
  }

 private:
  std::string socket_;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

int CountPrefixed(const std::string& screen, const std::string& prefix) {
  int n = 0;
  for (const std::string& line : Lines(screen))
    n += line.rfind(prefix, 0) == 0;
  return n;
}

TEST(ProgressTmuxTest, LaunchDrawsOneLiveBarPerRankAndEndsWithTheSummaries) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 6400, 100);
  Tmux tmux(dir.File("tmux.sock"));
  // The workers hold before step 100 until the test has seen a bar, so
  // that however fast the machine it sees the bar before and after.
  const std::string go = dir.File("go");
  const std::string command =
      PstrainTestingBin() +
      " launch --world_size 3 --master_port 0 --model mlp --batch_size 8" +
      " --max_steps 3000 --epochs 10 --log_interval 20 --threads 1 "
      "--hold_before_step 100 --hold_until " +
      go + " --data_dir " + dir.path() + " --checkpoint " + dir.File("m.pt") +
      "; echo EXIT=$?; sleep 300";
  ASSERT_EQ(tmux.Run({"new-session", "-d", "-s", "pstrain", "-x", "150", "-y",
                      "40", command})
                .exit_code,
            0);
  std::set<std::string> rank1_bars;
  std::string screen;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    screen = tmux.Capture();
    if (screen.find("EXIT=") != std::string::npos)
      break;
    for (const std::string& line : Lines(screen)) {
      if (line.rfind("[rank 1] [", 0) == 0)
        rank1_bars.insert(line);
    }
    if (!rank1_bars.empty() && !std::filesystem::exists(go))
      std::ofstream(go).close();
    // In place: never more than one bar per rank on the screen.
    EXPECT_LE(CountPrefixed(screen, "[rank 1] ["), 1) << screen;
    EXPECT_LE(CountPrefixed(screen, "[rank 2] ["), 1) << screen;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  ASSERT_NE(screen.find("EXIT=0"), std::string::npos) << screen;
  // The bar moved: several different states of rank 1's row were seen.
  EXPECT_GE(rank1_bars.size(), 2u) << screen;
  static const std::regex kBar(
      R"(\[rank 1\] \[[#-]{20}\] \d+/3000 loss \d+\.\d{4} \d+ samples/s ETA (\?|\d+:\d\d))");
  for (const std::string& bar : rank1_bars)
    EXPECT_TRUE(std::regex_search(bar, kBar)) << bar;
  // The rows end as the summaries, rank 0's with the test accuracy.
  auto lines = Lines(screen.substr(0, screen.find("EXIT=0")));
  ASSERT_GE(lines.size(), 3u);
  const size_t n = lines.size();
  EXPECT_EQ(lines[n - 3].rfind("[rank 0] done: test accuracy ", 0), 0u)
      << screen;
  EXPECT_EQ(lines[n - 2].rfind("[rank 1] done: ", 0), 0u) << screen;
  EXPECT_EQ(lines[n - 1].rfind("[rank 2] done: ", 0), 0u) << screen;
  EXPECT_NE(lines[n - 2].find("3000 steps"), std::string::npos) << screen;
}

}  // namespace
}  // namespace pstrain::testing
