// PushFrames, without a connection: a push lists the gradients by
// ascending gate mark and borrows their bytes on their marks; under
// --priority a gated push is tagged and lists them in key order; row-sparse
// keys travel as rows, last, on the full mark, with the next batch's row
// requests.

#include "worker/push_frames.h"

#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "net/frame_buffers.h"
#include "net/send_gate.h"

namespace pstrain::worker {
namespace push_frames_test {
namespace {

// Three float32 gradients of 2, 3 and 4 elements.
std::vector<at::Tensor> ThreeGrads() {
  return {at::zeros({2}), at::zeros({3}), at::zeros({4})};
}

std::vector<uint32_t> KeysOf(const std::vector<wire::TensorDesc>& descs) {
  std::vector<uint32_t> keys;
  for (const auto& d : descs)
    keys.push_back(d.key);
  return keys;
}

TEST(PushFramesTest, ListsGradientsByMarkAndBorrowsTheirBytesGated) {
  auto grads = ThreeGrads();
  net::SendGate gate(3);
  PushFrames push;
  push.Attach(grads);
  push.SetGate(&gate, {3, 1, 2});
  const wire::PushPull& meta = push.PushPullMeta(7);
  EXPECT_EQ(meta.version, 7u);
  EXPECT_EQ(KeysOf(meta.grads), (std::vector<uint32_t>{1, 2, 0}));
  EXPECT_EQ(meta.grads[0].nbytes, 12u);
  EXPECT_TRUE(meta.rows.empty());
  EXPECT_TRUE(meta.requests.empty());

  net::FrameBuffers frame;
  frame.Reset(wire::MsgType::kPushPull, 0, "meta");
  push.AddData(frame);
  EXPECT_EQ(frame.gate(), &gate);
  EXPECT_FALSE(frame.tagged());
  const auto& buffers = frame.Finish();
  ASSERT_EQ(buffers.size(), 4u);  // the prefix, then the three gradients
  const uint32_t keys[] = {1, 2, 0};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(buffers[i + 1].data(), grads[keys[i]].data_ptr()) << i;
    EXPECT_EQ(buffers[i + 1].size(), grads[keys[i]].nbytes()) << i;
    EXPECT_EQ(frame.mark(i + 1), i + 1) << i;
  }
  // A push alone carries the same gradients.
  const wire::Push& only = push.PushMeta(8);
  EXPECT_EQ(only.version, 8u);
  EXPECT_EQ(KeysOf(only.grads), (std::vector<uint32_t>{1, 2, 0}));
}

TEST(PushFramesTest, PriorityTagsAGatedPushInKeyOrder) {
  auto grads = ThreeGrads();
  net::SendGate gate(3);
  PushFrames push;
  push.Attach(grads);
  push.SetGate(&gate, {3, 1, 2});
  push.SetPriority(true);
  EXPECT_EQ(push.order(), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(KeysOf(push.PushPullMeta(1).grads),
            (std::vector<uint32_t>{0, 1, 2}));
  net::FrameBuffers frame;
  frame.Reset(wire::MsgType::kPushPull, 0, "meta");
  push.AddData(frame);
  ASSERT_TRUE(frame.tagged());
  EXPECT_EQ(frame.groups(), 3u);
  const auto& buffers = frame.Finish();
  // Group 0: its tag, then gradient 0 on its own mark.
  EXPECT_EQ(buffers[frame.group_begin(0) + 1].data(), grads[0].data_ptr());
  EXPECT_EQ(frame.mark(frame.group_begin(0) + 1), 3u);
  // Ungated: no tags, key order.
  push.SetGate(nullptr, {3, 1, 2});
  net::FrameBuffers plain;
  plain.Reset(wire::MsgType::kPushPull, 0, "meta");
  push.AddData(plain);
  EXPECT_FALSE(plain.tagged());
  EXPECT_EQ(plain.gate(), nullptr);
}

TEST(PushFramesTest, RowsTravelLastOnTheFullMarkWithTheNextBatchsRequests) {
  auto grads = ThreeGrads();
  std::vector<SparseSlot> slots(1);
  slots[0].key = 1;
  slots[0].push_ids = {3, 5};
  slots[0].push_rows = at::ones({2, 4});
  slots[0].want_ids = {0, 9};
  net::SendGate gate(3);
  PushFrames push;
  push.Attach(grads);
  push.SetGate(&gate, {2, 1, 1});
  push.SetPriority(true);  // no tags: the push carries rows
  push.SetSparse(&slots);
  const wire::PushPull& meta = push.PushPullMeta(4);
  EXPECT_EQ(KeysOf(meta.grads), (std::vector<uint32_t>{2, 0}));
  ASSERT_EQ(meta.rows.size(), 1u);
  EXPECT_EQ(meta.rows[0].rows.key, 1u);
  EXPECT_EQ(meta.rows[0].rows.nbytes, 32u);
  EXPECT_EQ(meta.rows[0].ids, (std::vector<int64_t>{3, 5}));
  ASSERT_EQ(meta.requests.size(), 1u);
  EXPECT_EQ(meta.requests[0].ids, (std::vector<int64_t>{0, 9}));
  // The next batch's rows: the metas follow the slots.
  slots[0].push_ids = {7};
  slots[0].push_rows = at::ones({1, 4});
  const wire::Push& only = push.PushMeta(5);
  ASSERT_EQ(only.rows.size(), 1u);
  EXPECT_EQ(only.rows[0].ids, (std::vector<int64_t>{7}));
  EXPECT_TRUE(only.requests.empty());

  net::FrameBuffers frame;
  frame.Reset(wire::MsgType::kPush, 0, "meta");
  push.AddData(frame);
  EXPECT_FALSE(frame.tagged());
  const auto& buffers = frame.Finish();
  ASSERT_EQ(buffers.size(), 4u);  // the prefix, gradients 2 and 0, the rows
  EXPECT_EQ(buffers[3].data(), slots[0].push_rows.data_ptr());
  EXPECT_EQ(frame.mark(3), net::SendGate::kAll);
}

}  // namespace
}  // namespace push_frames_test
}  // namespace pstrain::worker
