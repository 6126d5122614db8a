#include "report/event_history.h"

#include <gtest/gtest.h>

namespace pstrain::report {
namespace {

using nlohmann::json;

json Event(const std::string& name, int rank, int i) {
  return {{"event", name}, {"rank", rank}, {"role", "worker"}, {"i", i}};
}

std::vector<int> Indices(const EventHistory& h, const std::string& name,
                         int rank) {
  std::vector<int> out;
  const json runs = json::parse(h.RunsJson("live"));
  for (const auto& e : runs["runs"][0]["events"]) {
    if (e["event"] == name && e["rank"] == rank)
      out.push_back(e["i"].get<int>());
  }
  return out;
}

TEST(EventHistoryTest, KeepsEventsInOrderUnderOneRun) {
  EventHistory h;
  h.Add(Event("listen", 0, 0));
  h.Add(Event("step", 1, 1));
  h.Add(Event("eval", 0, 2));
  h.Add(Event("step", 2, 3));
  h.Add(json("not an object"));
  auto runs = json::parse(h.RunsJson("live"));
  ASSERT_EQ(runs["runs"].size(), 1u);
  EXPECT_EQ(runs["runs"][0]["name"], "live");
  std::vector<int> order;
  for (const auto& e : runs["runs"][0]["events"])
    order.push_back(e["i"].get<int>());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(h.size(), 4u);
}

TEST(EventHistoryTest, ThinsStepsPerRankKeepingTheEnds) {
  EventHistory h(4);
  for (int i = 0; i < 5; ++i)
    h.Add(Event("step", 1, i));
  // 5 > 4: every other one goes, the newest stays.
  EXPECT_EQ(Indices(h, "step", 1), (std::vector<int>{0, 2, 4}));
  h.Add(Event("step", 1, 5));
  h.Add(Event("step", 1, 6));
  h.Add(Event("step", 1, 7));
  EXPECT_EQ(Indices(h, "step", 1), (std::vector<int>{0, 4, 6, 7}));
  for (int i = 0; i < 100; ++i)
    h.Add(Event("eval", 0, i));
  EXPECT_EQ(Indices(h, "eval", 0).size(), 100u);  // never thinned
}

TEST(EventHistoryTest, RanksAreThinnedApart) {
  EventHistory h(2);
  for (int i = 0; i < 3; ++i)
    h.Add(Event("progress", 1, i));
  h.Add(Event("progress", 2, 9));
  EXPECT_EQ(Indices(h, "progress", 1), (std::vector<int>{0, 2}));
  EXPECT_EQ(Indices(h, "progress", 2), (std::vector<int>{9}));
}

}  // namespace
}  // namespace pstrain::report
