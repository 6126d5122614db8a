#include "trace/timeline.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::trace {
namespace {

using nlohmann::json;

std::vector<json> Complete(const json& trace) {
  std::vector<json> spans;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X")
      spans.push_back(e);
  }
  return spans;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/timeline_" + std::to_string(::getpid()) +
         "_" + name;
}

TEST(TimelineTest, WritesTraceEventFormat) {
  Timeline timeline(2, "rank 2 (worker)");
  timeline.SetKeyNames({"conv1.weight", "conv1.bias"});
  timeline.NameThread("training");
  timeline.Record({"push", 0, 12, 11, 4096}, 1000, 1250);
  timeline.Record({"forward", -1, 12, 11}, 900, 1000);
  const json trace = timeline.ToJson();
  ASSERT_TRUE(trace["traceEvents"].is_array());
  bool named_process = false, named_thread = false;
  for (const auto& e : trace["traceEvents"]) {
    EXPECT_EQ(e["pid"], 2);
    ASSERT_TRUE(e.contains("ph") && e.contains("name") && e.contains("tid"));
    if (e["ph"] == "M" && e["name"] == "process_name")
      named_process = e["args"]["name"] == "rank 2 (worker)";
    if (e["ph"] == "M" && e["name"] == "thread_name" &&
        e["tid"] == Timeline::ThisThread())
      named_thread = e["args"]["name"] == "training";
  }
  EXPECT_TRUE(named_process);
  EXPECT_TRUE(named_thread);
  const auto spans = Complete(trace);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0]["name"], "push conv1.weight v12");
  EXPECT_EQ(spans[0]["ts"], 1000);
  EXPECT_EQ(spans[0]["dur"], 250);
  EXPECT_EQ(spans[0]["args"]["key"], 0);
  EXPECT_EQ(spans[0]["args"]["version"], 12);
  EXPECT_EQ(spans[0]["args"]["step"], 11);
  EXPECT_EQ(spans[0]["args"]["bytes"], 4096);
  EXPECT_EQ(spans[1]["name"], "forward v12");
  EXPECT_FALSE(spans[1]["args"].contains("key"));
}

TEST(TimelineTest, ScopesNestOnTheirThread) {
  Timeline timeline(0, "rank 0 (server)");
  {
    Scope outer(&timeline, {"step", -1, 3});
    { Scope inner(&timeline, {"update", 5, 3}); }
  }
  const auto spans = Complete(timeline.ToJson());
  ASSERT_EQ(spans.size(), 2u);
  const json& inner = spans[0];
  const json& outer = spans[1];
  EXPECT_EQ(inner["name"], "update key 5 v3");  // no key names set
  EXPECT_LE(outer["ts"].get<int64_t>(), inner["ts"].get<int64_t>());
  EXPECT_GE(outer["ts"].get<int64_t>() + outer["dur"].get<int64_t>(),
            inner["ts"].get<int64_t>() + inner["dur"].get<int64_t>());
  EXPECT_EQ(outer["tid"], inner["tid"]);
}

TEST(TimelineTest, NullScopeRecordsNothing) {
  Scope scope(nullptr, {"forward"});
  scope.End();  // no crash, nothing to record into
}

TEST(TimelineTest, ThreadsAndTracksHaveTheirOwnIds) {
  Timeline timeline(1, "rank 1 (worker)");
  timeline.NameThread("training");
  const int track = timeline.Track("from rank 3");
  timeline.Record({"push", 0, 1}, 10, 20, track);
  int other = 0;
  std::thread t([&] {
    timeline.NameThread("exchange 0");
    other = Timeline::ThisThread();
    timeline.Record({"pull", 0, 1}, 30, 40);
  });
  t.join();
  EXPECT_NE(other, Timeline::ThisThread());
  std::map<int, std::string> names;
  const json trace = timeline.ToJson();
  for (const auto& e : trace["traceEvents"]) {
    if (e["name"] == "thread_name")
      names[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
  }
  EXPECT_EQ(names[track], "from rank 3");
  EXPECT_EQ(names[other], "exchange 0");
  EXPECT_EQ(names[Timeline::ThisThread()], "training");
}

TEST(TimelineTest, ConcurrentAppendsAreAllKept) {
  Timeline timeline(0, "rank 0 (server)");
  constexpr int kThreads = 8, kSpans = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&timeline, t] {
      for (int i = 0; i < kSpans; ++i)
        timeline.Record({"push", t, i}, i, i + 1);
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(timeline.size(), size_t{kThreads} * kSpans);
  std::set<std::pair<int, int>> seen;
  std::map<int, std::set<int>> tids_by_key;
  for (const auto& s : Complete(timeline.ToJson())) {
    const int key = s["args"]["key"].get<int>();
    seen.insert({key, s["args"]["version"].get<int>()});
    tids_by_key[key].insert(s["tid"].get<int>());
  }
  EXPECT_EQ(seen.size(), size_t{kThreads} * kSpans);
  for (const auto& [key, tids] : tids_by_key)
    EXPECT_EQ(tids.size(), 1u) << "key " << key;
}

TEST(TimelineTest, MergesFilesIntoOneTrace) {
  Timeline a(0, "rank 0 (server)"), b(1, "rank 1 (worker)");
  a.Record({"update", 0, 1}, 10, 20);
  b.Record({"push", 0, 0}, 5, 9);
  const std::string pa = TempPath("a.json"), pb = TempPath("b.json");
  const std::string out = TempPath("all.json");
  ASSERT_TRUE(a.WriteFile(pa).ok());
  ASSERT_TRUE(b.WriteFile(pb).ok());
  ASSERT_TRUE(MergeFiles({pa, pb, TempPath("missing.json")}, out).ok());
  std::ifstream in(out);
  const json merged = json::parse(in);
  std::set<int> pids;
  for (const auto& s : Complete(merged))
    pids.insert(s["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{0, 1}));
  std::ofstream(pb) << "not json";
  EXPECT_EQ(MergeFiles({pa, pb}, out).code(), StatusCode::kCorruption);
  std::remove(pa.c_str());
  std::remove(pb.c_str());
  std::remove(out.c_str());
}

}  // namespace
}  // namespace pstrain::trace
