// ExchangeRound: an exchange starts with no server answered, keeps each
// server's last version across exchanges, and ends once.

#include "worker/exchange_round.h"

#include <gtest/gtest.h>

namespace pstrain::worker {
namespace {

using RoundKind = ExchangeRound::Kind;

TEST(ExchangeRoundTest, StartsWithNoneAnsweredAndEndsOnce) {
  ExchangeRound round;
  round.Reset(3);
  EXPECT_EQ(round.kind(), RoundKind::kPull);
  EXPECT_FALSE(round.answered(0)) << "before any exchange";
  EXPECT_FALSE(round.End()) << "none under way";
  round.Start(RoundKind::kPushPull);
  EXPECT_EQ(round.kind(), RoundKind::kPushPull);
  round.Answer(2, 9);
  EXPECT_FALSE(round.answered(0));
  EXPECT_FALSE(round.answered(1));
  EXPECT_TRUE(round.answered(2));
  EXPECT_EQ(round.version(2), 9u);
  EXPECT_EQ(round.version(0), 0u);
  EXPECT_TRUE(round.End());
  EXPECT_FALSE(round.End());
  EXPECT_TRUE(round.answered(2)) << "the last exchange's, after its end";
}

TEST(ExchangeRoundTest, KeepsVersionsAcrossExchanges) {
  ExchangeRound round;
  round.Reset(2);
  round.Start(RoundKind::kPull);
  round.Answer(0, 4);
  round.Answer(1, 5);
  EXPECT_TRUE(round.End());
  round.Start(RoundKind::kPushPull);
  EXPECT_FALSE(round.answered(0));
  EXPECT_FALSE(round.answered(1));
  EXPECT_EQ(round.version(0), 4u);  // what the push-pull pushes
  EXPECT_EQ(round.version(1), 5u);
  round.Reset(2);
  EXPECT_EQ(round.version(0), 0u);
}

// A failed exchange is resent to the lost servers only when every other
// server's reply is in, rank 0's lost or not.
TEST(ExchangeRoundTest, AnsweredAllButTheLost) {
  ExchangeRound round;
  round.Reset(3);
  round.Start(RoundKind::kPushPull);
  round.Answer(1, 7);
  EXPECT_FALSE(round.AnsweredAllBut({0})) << "server 2 has not answered";
  EXPECT_TRUE(round.AnsweredAllBut({0, 2}));
  round.Answer(2, 7);
  EXPECT_TRUE(round.AnsweredAllBut({0}));
  EXPECT_FALSE(round.AnsweredAllBut({1})) << "rank 0 has not answered";
  round.Answer(0, 7);
  EXPECT_TRUE(round.AnsweredAllBut({}));
}

}  // namespace
}  // namespace pstrain::worker
