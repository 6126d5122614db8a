// GatedWrites, without sockets: an in-order frame goes out up to its first
// closed mark; a tagged one its prefix, then each group once its own marks
// are open, the first in frame order first.

#include "net/gated_writes.h"

#include <gtest/gtest.h>

#include "net/frame_buffers.h"
#include "net/send_gate.h"

namespace pstrain::net {
namespace {

constexpr char kData[] = "abcdefgh";

// A push of three one-byte tensors on marks 1, 2, 3; `tagged`: each after
// its tag.
void Build(FrameBuffers* frame, SendGate* gate, bool tagged) {
  frame->Reset(wire::MsgType::kPush, 1, "meta");
  frame->SetGate(gate);
  for (uint32_t i = 0; i < 3; ++i) {
    if (tagged)
      frame->AddTag(i);
    frame->AddData(kData + i, 1, i + 1);
  }
  frame->Finish();
}

TEST(GatedWritesTest, InOrderStopsAtTheFirstClosedMark) {
  SendGate gate(3);
  FrameBuffers frame;
  Build(&frame, &gate, false);
  GatedWrites w;
  w.Start(frame);
  gate.Open(2);  // alone: buffer 2 waits behind buffer 1
  GatedWrites::Range r = w.Next(frame);
  EXPECT_EQ(r.begin, 0u);
  EXPECT_EQ(r.end, 1u);  // the prefix only
  w.Wrote(r);
  EXPECT_TRUE(w.Next(frame).empty());
  gate.Open(1);
  r = w.Next(frame);
  EXPECT_EQ(r.begin, 1u);
  EXPECT_EQ(r.end, 3u);
  w.Wrote(r);
  EXPECT_FALSE(w.done());
  gate.OpenTo(SendGate::kAll);
  r = w.Next(frame);
  EXPECT_EQ(r.end, 4u);
  w.Wrote(r);
  EXPECT_TRUE(w.done());
}

TEST(GatedWritesTest, ATaggedFrameSendsTheFirstOpenGroupFirst) {
  SendGate gate(3);
  FrameBuffers frame;
  Build(&frame, &gate, true);  // prefix, then (tag, byte) x 3
  ASSERT_EQ(frame.groups(), 3u);
  GatedWrites w;
  w.Start(frame);
  GatedWrites::Range r = w.Next(frame);
  EXPECT_EQ(r.end, 1u);  // the prefix, whatever is open
  w.Wrote(r);
  EXPECT_TRUE(w.at_group());
  EXPECT_TRUE(w.Next(frame).empty());
  gate.Open(3);
  gate.Open(2);
  r = w.Next(frame);
  EXPECT_EQ(r.begin, frame.group_begin(1));  // group 1 before group 2
  EXPECT_EQ(r.end, frame.group_end(1));
  w.Wrote(r);
  r = w.Next(frame);
  EXPECT_EQ(r.begin, frame.group_begin(2));
  w.Wrote(r);
  EXPECT_FALSE(w.done());
  EXPECT_TRUE(w.Next(frame).empty());
  gate.Open(1);
  r = w.Next(frame);
  EXPECT_EQ(r.begin, frame.group_begin(0));
  w.Wrote(r);
  EXPECT_TRUE(w.done());
}

TEST(GatedWritesTest, AnUngatedFrameGoesAtOnce) {
  FrameBuffers frame;
  Build(&frame, nullptr, true);
  GatedWrites w;
  w.Start(frame);
  const GatedWrites::Range r = w.Next(frame);
  EXPECT_EQ(r.begin, 0u);
  EXPECT_EQ(r.end, frame.buffers().size());
  w.Wrote(r);
  EXPECT_TRUE(w.done());
}

}  // namespace
}  // namespace pstrain::net
