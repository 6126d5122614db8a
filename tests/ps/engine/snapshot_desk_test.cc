// The SnapshotDesk: requests wait for a complete version, one copy serves
// them, the run's end answers the rest with nothing, and a standby's ask
// is the acknowledgement that holds replies back until it has the version.

#include "ps/engine/snapshot_desk.h"

#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"
#include "ps/store/parameter_server.h"
#include "ps/store/snapshot.h"
#include "testing/driver_job.h"

namespace pstrain::ps {
namespace {

// A StepDriver's job, its peers and the SnapshotDesk over its store.
struct Copies : testing::DriverJob {
  Copies() : DriverJob(Mode::kSync, 1), desk(&store, &steps, &table, &outbox) {}

  // A connection that said hello as rank 0's tool (the observer, a
  // standby).
  Peer& Tool(PeerId id) {
    Peer& p = table.Add(id, "t", "", At(0));
    p.role = Peer::Role::kTool;
    return table.Become<ToolPeer>(p);
  }

  PeerTable table;  // the connections, apart from DriverJob's workers
  SnapshotDesk desk;
};

TEST(SnapshotDeskTest, ARequestWaitsForItsVersionAndOneCopyServesAll) {
  Copies c;
  std::vector<std::shared_ptr<const Snapshot>> got;
  auto keep = [&got](std::shared_ptr<const Snapshot> s) { got.push_back(s); };
  std::vector<uint64_t> versions;
  c.desk.set_on_version([&versions](uint64_t v) { versions.push_back(v); });
  c.desk.Request(1, false, keep, false, false, testing::DriverJob::At(1));
  c.desk.Request(1, true, keep, false, false, testing::DriverJob::At(1));
  EXPECT_TRUE(got.empty());  // version 0 is all there is
  c.params[0].detach().fill_(5.0f);
  c.store.set_version(1);
  c.desk.Complete(testing::DriverJob::At(2));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], got[1]);  // one copy
  EXPECT_EQ(got[0]->version, 1u);
  EXPECT_TRUE(torch::equal(got[0]->params[0], torch::full({2}, 5.0f)));
  EXPECT_FALSE(got[0]->optimizer_state.empty());  // one of them asked
  EXPECT_EQ(versions, std::vector<uint64_t>{1});
  // A copy, not a view: the parameters move on, the snapshot does not.
  c.params[0].detach().fill_(7.0f);
  EXPECT_TRUE(torch::equal(got[0]->params[0], torch::full({2}, 5.0f)));
}

TEST(SnapshotDeskTest, TheRunsEndAnswersWithNothing) {
  Copies c;
  int nothing = 0;
  auto count = [&nothing](std::shared_ptr<const Snapshot> s) {
    nothing += s == nullptr;
  };
  c.desk.Request(3, false, count, false, false, testing::DriverJob::At(1));
  c.desk.Abandon();
  EXPECT_EQ(nothing, 1);
  c.desk.Request(0, false, count, false, /*stopping=*/true,
                 testing::DriverJob::At(1));
  EXPECT_EQ(nothing, 2);
}

TEST(SnapshotDeskTest, AStandbysAskHoldsRepliesUntilItHasTheVersion) {
  Copies c;
  c.store.set_version(2);
  EXPECT_TRUE(c.desk.replicated());  // no standby: nothing waited for
  Peer& standby = c.Tool(7);
  std::string meta;
  wire::EncodeMeta(wire::Snapshot{2, false, true, false}, &meta);
  auto asked = c.desk.Ask(standby, meta, false);
  ASSERT_TRUE(asked.ok());
  EXPECT_TRUE(asked->standby);
  EXPECT_FALSE(c.desk.replicated());  // it holds version 1 of 2
  wire::EncodeMeta(wire::Snapshot{3, false, true, false}, &meta);
  ASSERT_TRUE(c.desk.Ask(standby, meta, false).ok());
  EXPECT_TRUE(c.desk.replicated());
  EXPECT_FALSE(c.desk.Drop(8, false));  // no standby
  EXPECT_TRUE(c.desk.Drop(7, false));
  Peer& worker = c.table.Add(9, "w", "", testing::DriverJob::At(0));
  EXPECT_EQ(c.desk.Ask(worker, meta, false).status().message(),
            "snapshot from a worker or server");
}

// A standby that lacks a version made --dead_after ago and has said
// nothing since is closed without an error frame (it copies again if it
// runs again); one that asked meanwhile, or holds the version, is not.
TEST(SnapshotDeskTest, AStandbySilentWhileItLacksAVersionIsClosed) {
  Copies c;
  c.store.set_version(1);
  Peer& standby = c.Tool(7);
  standby.last_heard = testing::DriverJob::At(0);
  std::string meta;
  wire::EncodeMeta(wire::Snapshot{2, false, true, false}, &meta);
  ASSERT_TRUE(c.desk.Ask(standby, meta, false).ok());  // holds 1
  c.desk.DropLate(testing::DriverJob::At(10), 1.0);
  EXPECT_TRUE(c.outbox.closed.empty());  // it holds the latest version
  c.store.set_version(2);
  c.desk.Complete(testing::DriverJob::At(10));
  c.desk.DropLate(testing::DriverJob::At(10.5), 1.0);
  EXPECT_TRUE(c.outbox.closed.empty());
  c.desk.DropLate(testing::DriverJob::At(11.5), 0);  // --dead_after off
  EXPECT_TRUE(c.outbox.closed.empty());
  c.desk.DropLate(testing::DriverJob::At(11.5), 1.0);
  ASSERT_EQ(c.outbox.closed.size(), 1u);
  EXPECT_EQ(c.outbox.closed[0].peer, 7u);
  EXPECT_FALSE(c.outbox.closed[0].error_frame);
  EXPECT_TRUE(c.outbox.closed[0].why.ok());
  ASSERT_FALSE(c.outbox.info.empty());
  EXPECT_EQ(c.outbox.info.back(),
            "no word from the standby at t for 1 s (--dead_after): replies "
            "wait for it no longer");
  EXPECT_TRUE(standby.closing);
}

}  // namespace
}  // namespace pstrain::ps
