#include "job_test.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/rank/checkpoint_rotation.h"
#include "ps/store/checkpoint.h"

namespace pstrain::testing {

std::vector<nlohmann::json> FindEvents(const std::string& out,
                                       const std::string& event) {
  std::istringstream in(out);
  std::string line;
  std::vector<nlohmann::json> events;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.value("event", "") == event)
      events.push_back(std::move(j));
  }
  return events;
}

nlohmann::json FindEvent(const std::string& out, const std::string& event) {
  std::vector<nlohmann::json> events = FindEvents(out, event);
  return events.empty() ? nlohmann::json() : events.back();
}

double MaxAbsDiff(const std::string& a, const std::string& b) {
  auto ta = ps::LoadCheckpointTensors(a);
  auto tb = ps::LoadCheckpointTensors(b);
  EXPECT_TRUE(ta.ok()) << ta.status().ToString();
  EXPECT_TRUE(tb.ok()) << tb.status().ToString();
  if (!ta.ok() || !tb.ok() || ta->size() != tb->size()) {
    ADD_FAILURE() << "checkpoints differ in their keys";
    return 1e9;
  }
  double diff = 0;
  for (size_t i = 0; i < ta->size(); ++i) {
    EXPECT_EQ((*ta)[i].first, (*tb)[i].first);
    EXPECT_TRUE((*ta)[i].second.sizes().equals((*tb)[i].second.sizes()));
    diff = std::max(
        diff, ((*ta)[i].second - (*tb)[i].second).abs().max().item<double>());
  }
  return diff;
}

void WriteText(const std::string& path, int lines, uint32_t seed) {
  std::mt19937 gen(seed);
  std::geometric_distribution<int> word(0.08);
  std::uniform_int_distribution<int> length(1, 12);
  std::ofstream out(path);
  for (int l = 0; l < lines; ++l) {
    for (int n = length(gen); n > 0; --n)
      out << "w" << std::min(word(gen), 39) << (n > 1 ? " " : "");
    out << "\n";
  }
}

void WriteTinyCorpus(const std::string& dir) {
  WriteText(dir + "/train.txt", 60, 1);
  WriteText(dir + "/valid.txt", 10, 2);
  WriteText(dir + "/test.txt", 20, 3);
}

std::vector<std::string> Concat(std::vector<std::string> a,
                                const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::pair<uint64_t, std::string> WaitForCheckpoint(const std::string& base,
                                                   double timeout_seconds) {
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    const auto complete = ps::CompleteCheckpoints(base);
    if (!complete.empty())
      return complete.back();
    if (std::chrono::steady_clock::now() >= end)
      return {0, ""};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace pstrain::testing
