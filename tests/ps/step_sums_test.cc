// StepSums: pieces added in any order make the mean, and a key is final
// once every piece has its addends, a lost worker's included.

#include "ps/rules/step_sums.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::ps {
namespace {

constexpr uint64_t kPiece = StepSums::kPieceBytes;
constexpr int64_t kTwoPieces = kPiece / 4 + 10;  // floats

std::vector<at::Tensor> Params() {
  return {torch::zeros({kTwoPieces}), torch::zeros({3})};
}

void AddKey0(StepSums& s, int w, float value, int needed) {
  std::vector<float> g(kTwoPieces, value);
  s.Add(w, 0, 0, g.data(), kPiece, needed);
  s.Add(w, 0, kPiece, g.data() + kPiece / 4, kTwoPieces * 4 - kPiece, needed);
}

TEST(StepSumsTest, AKeyIsFinalWhenEveryPieceHasItsAddends) {
  StepSums s(Params(), 2);
  EXPECT_FALSE(s.Final(0, 2));
  AddKey0(s, 0, 1.0f, 2);
  EXPECT_FALSE(s.Final(0, 2));
  std::vector<float> g(kTwoPieces, 3.0f);
  s.Add(1, 0, 0, g.data(), kPiece, 2);
  EXPECT_FALSE(s.Final(0, 2));  // its second piece waits
  s.Add(1, 0, kPiece, g.data(), kTwoPieces * 4 - kPiece, 2);
  EXPECT_TRUE(s.Final(0, 2));
  EXPECT_FALSE(s.Final(1, 2));
  EXPECT_FLOAT_EQ(s.sum(0)[0].item<float>(), 2.0f);
  EXPECT_FLOAT_EQ(s.sum(0)[kTwoPieces - 1].item<float>(), 2.0f);
}

TEST(StepSumsTest, ALostWorkersPiecesStayAndTheRestAreDivided) {
  StepSums s(Params(), 3);
  AddKey0(s, 0, 1.0f, 3);
  std::vector<float> g(kTwoPieces, 4.0f);
  s.Add(1, 0, 0, g.data(), kPiece, 3);  // then worker 1 is lost
  AddKey0(s, 2, 7.0f, 3);
  EXPECT_FALSE(s.Final(0, 3));
  s.Remove(1, 2);
  EXPECT_TRUE(s.Final(0, 2));
  // Piece 0 has all three addends; piece 1 only workers 0 and 2.
  EXPECT_FLOAT_EQ(s.sum(0)[0].item<float>(), 4.0f);
  EXPECT_FLOAT_EQ(s.sum(0)[kTwoPieces - 1].item<float>(), 4.0f);
  s.Clear();
  EXPECT_FALSE(s.Final(0, 2));
}

TEST(StepSumsTest, ARecordCountsForEveryPieceOfItsKey) {
  StepSums s(Params(), 2);
  std::vector<float> raw(3, 2.0f);
  const auto* bytes = reinterpret_cast<const uint8_t*>(raw.data());
  s.AddRecord(0, 1, wire::Codec::kRaw, {}, bytes, 12, 2);
  EXPECT_FALSE(s.Final(1, 2));
  s.AddRecord(1, 1, wire::Codec::kRaw, {}, bytes, 12, 2);
  EXPECT_TRUE(s.Final(1, 2));
  EXPECT_FLOAT_EQ(s.sum(1)[2].item<float>(), 2.0f);
}

}  // namespace
}  // namespace pstrain::ps
