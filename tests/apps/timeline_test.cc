// --timeline under launch: one merged Chrome trace in which every rank's
// track is present and named, each worker's steps follow one another, and
// the pushes and pulls cover every key of the model.

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;
using nlohmann::json;

constexpr int kSteps = 20;

// A step's extent on one worker: its spans' first start and last end.
struct Extent {
  int64_t begin = INT64_MAX;
  int64_t end = INT64_MIN;
};

TEST(TimelineTest, LaunchWritesOneTraceOfEveryRank) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 50);
  const std::string out = dir.File("timeline");
  auto r = RunPstrain({"launch",
                       "--world_size",
                       "3",
                       "--master_port",
                       "0",
                       "--model",
                       "net",
                       "--mode",
                       "sync",
                       "--batch_size",
                       "16",
                       "--max_steps",
                       std::to_string(kSteps),
                       "--data_dir",
                       dir.path(),
                       "--threads",
                       "1",
                       "--checkpoint",
                       dir.File("m.pt"),
                       "--timeline",
                       out,
                       "--json"},
                      60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out + "/timeline.json");
  ASSERT_TRUE(in.good()) << "no " << out << "/timeline.json";
  const json trace = json::parse(in);
  ASSERT_TRUE(trace["traceEvents"].is_array());

  std::map<int, std::string> process_names;
  std::map<int, std::map<int64_t, Extent>> steps;     // worker pid, step
  std::map<std::string, std::set<std::string>> keys;  // "push"/"pull", names
  std::set<std::string> server_keys;
  for (const auto& e : trace["traceEvents"]) {
    const int pid = e["pid"];
    if (e["ph"] == "M" && e["name"] == "process_name")
      process_names[pid] = e["args"]["name"].get<std::string>();
    if (e["ph"] != "X")
      continue;
    ASSERT_GE(e["dur"].get<int64_t>(), 0) << e;
    const std::string cat = e["cat"];
    const std::string name = e["name"];
    const json& args = e["args"];
    if (pid == 0 && cat == "update") {
      // A slice of a key ("fc1.weight[0:12]") is of that key.
      const std::string key = name.substr(7, name.rfind(" v") - 7);
      server_keys.insert(key.substr(0, key.find('[')));
    }
    if (pid == 0 || !args.contains("step"))
      continue;
    if ((cat == "push" || cat == "pull") && args.contains("key"))
      keys[cat].insert(name.substr(5, name.rfind(" v") - 5));
    if (cat == "pull" && args["step"] < 0)
      continue;  // the first pull, before any step
    const int64_t ts = e["ts"], end = ts + e["dur"].get<int64_t>();
    Extent& x = steps[pid][args["step"].get<int64_t>()];
    x.begin = std::min(x.begin, ts);
    x.end = std::max(x.end, end);
  }
  EXPECT_EQ(process_names[0], "rank 0 (server)");
  EXPECT_EQ(process_names[1], "rank 1 (worker)");
  EXPECT_EQ(process_names[2], "rank 2 (worker)");

  // The server's updates name every key of the model; every worker pushes
  // and pulls each of them.
  ASSERT_FALSE(server_keys.empty());
  EXPECT_EQ(keys["push"], server_keys);
  EXPECT_EQ(keys["pull"], server_keys);

  for (int pid : {1, 2}) {
    const auto& by_step = steps[pid];
    ASSERT_EQ(by_step.size(), static_cast<size_t>(kSteps)) << "rank " << pid;
    for (auto it = std::next(by_step.begin()); std::next(it) != by_step.end();
         ++it) {
      const Extent& before = std::prev(it)->second;
      const Extent& now = it->second;
      const Extent& after = std::next(it)->second;
      EXPECT_LE(before.begin, now.begin)
          << "rank " << pid << " step " << it->first;
      EXPECT_LE(now.begin, after.begin)
          << "rank " << pid << " step " << it->first;
      EXPECT_LE(before.end, now.end) << "rank " << pid << " step " << it->first;
      EXPECT_LE(now.end, after.end) << "rank " << pid << " step " << it->first;
    }
  }
}

}  // namespace
}  // namespace pstrain::testing
