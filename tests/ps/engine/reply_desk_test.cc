// The ReplyDesk: when a reply may leave (the version it waits for, the
// standbys' copy, SSP's bound, the step updated ahead, the stop), held
// replies kept by worker and handed back once due, and what a params
// reply carries.

#include "ps/engine/reply_desk.h"

#include <chrono>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/peer.h"
#include "ps/engine/step_driver.h"
#include "ps/store/parameter_server.h"
#include "testing/driver_job.h"

namespace pstrain::ps {
namespace {

Time ReplyAt(double seconds) {
  return testing::DriverJob::At(seconds);
}

// A StepDriver's job and the ReplyDesk that reads it (ssp: staleness 0).
struct Desk : testing::DriverJob {
  Desk(Mode mode, int workers)
      : DriverJob(mode, workers),
        replies(spec, &store, &formats, &members, &steps, &outbox) {}

  ReplyDesk replies;
};

TEST(ReplyDeskTest, APullForALaterVersionIsHeldUntilItExists) {
  Desk d(Mode::kSync, 2);
  WorkerPeer& p = *d.peers[0];
  auto now = d.replies.Await(p, 7, 0, false, true, ReplyAt(1));
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(*now, ReplyAnswer::kNow);  // version 0 exists
  auto held = d.replies.Await(p, 8, 1, false, true, ReplyAt(1));
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(*held, ReplyAnswer::kHeld);
  EXPECT_TRUE(d.replies.holds(0));
  EXPECT_EQ(d.replies.held_id(0), 8u);
  auto again = d.replies.Await(p, 9, 1, false, true, ReplyAt(1));
  EXPECT_EQ(again.status().message(), "a pull is already pending");
  EXPECT_TRUE(d.replies.TakeDue(true, ReplyAt(2)).empty());  // still 0
  d.store.set_version(1);
  EXPECT_TRUE(d.replies.TakeDue(false, ReplyAt(2)).empty());  // no copy yet
  const std::vector<ReplyDesk::Due>& due = d.replies.TakeDue(true, ReplyAt(3));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].peer, &p);
  EXPECT_EQ(due[0].id, 8u);
  EXPECT_FALSE(due[0].ahead);
  EXPECT_DOUBLE_EQ(p.waiting_seconds, 2.0);  // held from 1 s to 3 s
  EXPECT_FALSE(d.replies.holds(0));
}

TEST(ReplyDeskTest, SspHoldsTheFastestUntilTheSlowestCatchesUp) {
  Desk d(Mode::kSsp, 2);
  d.replies.NotePush(0);  // worker 0 one step ahead, staleness 0
  auto held = d.replies.Await(*d.peers[0], 3, 0, true, true, ReplyAt(0));
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(*held, ReplyAnswer::kHeld);
  EXPECT_TRUE(d.replies.TakeDue(true, ReplyAt(1)).empty());
  d.replies.SetTraining(1, false);  // the slowest finished: none held back
  ASSERT_EQ(d.replies.TakeDue(true, ReplyAt(1)).size(), 1u);
}

TEST(ReplyDeskTest, OnceStoppedEveryReplyLeavesAtOnce) {
  Desk d(Mode::kSync, 2);
  ASSERT_EQ(*d.replies.Await(*d.peers[0], 1, 5, false, true, ReplyAt(0)),
            ReplyAnswer::kHeld);
  ASSERT_TRUE(d.steps.Stop());
  EXPECT_EQ(d.replies.TakeDue(false, ReplyAt(1)).size(), 1u);
  EXPECT_EQ(*d.replies.Await(*d.peers[1], 2, 5, false, false, ReplyAt(1)),
            ReplyAnswer::kNow);
}

TEST(ReplyDeskTest, AForgottenWorkerHasNothingHeld) {
  Desk d(Mode::kSync, 1);
  ASSERT_EQ(*d.replies.Await(*d.peers[0], 1, 1, false, true, ReplyAt(0)),
            ReplyAnswer::kHeld);
  d.replies.Forget(0);  // a new connection of the rank registered
  d.store.set_version(1);
  EXPECT_TRUE(d.replies.TakeDue(true, ReplyAt(1)).empty());
}

TEST(ReplyDeskTest, APushIsAckedAndAParamsReplyCarriesTheVersion) {
  Desk d(Mode::kAsync, 1);
  WorkerPeer& p = *d.peers[0];
  p.push_is_push_pull = false;
  ASSERT_EQ(*d.replies.AnswerPush(p, 4, true, ReplyAt(0)), ReplyAnswer::kNone);
  ASSERT_EQ(d.outbox.sent.size(), 1u);
  EXPECT_EQ(d.outbox.sent[0].type, wire::MsgType::kAck);
  EXPECT_EQ(d.outbox.sent[0].request_id, 4u);
  d.replies.SendParams(p, 5, false);
  ASSERT_EQ(d.outbox.sent.size(), 2u);
  const auto& params = d.outbox.sent[1];
  EXPECT_EQ(params.type, wire::MsgType::kParams);
  wire::Params msg;
  ASSERT_TRUE(wire::DecodeMeta(params.meta, &msg).ok());
  EXPECT_EQ(msg.version, 0u);
  EXPECT_FALSE(msg.stop);
  ASSERT_EQ(params.data.size(), 1u);
  EXPECT_EQ(params.data[0].data, d.params[0].data_ptr());  // zero copy
  EXPECT_EQ(params.data[0].bytes, 8u);
}

}  // namespace
}  // namespace pstrain::ps
