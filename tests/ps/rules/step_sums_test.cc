// StepSums: pieces added in any order make the mean, and a key is final
// once every piece has its addends, a lost worker's included; a piece is
// checked for NaN and Inf in the pass that sums it, at any alignment.

#include "ps/rules/step_sums.h"

#include <cstring>
#include <limits>

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
  EXPECT_TRUE(s.Add(w, 0, 0, g.data(), kPiece, needed));
  EXPECT_TRUE(s.Add(w, 0, kPiece, g.data() + kPiece / 4,
                    kTwoPieces * 4 - kPiece, needed));
}

TEST(StepSumsTest, AKeyIsFinalWhenEveryPieceHasItsAddends) {
  StepSums s(Params(), 2);
  EXPECT_FALSE(s.Final(0, 2));
  AddKey0(s, 0, 1.0f, 2);
  EXPECT_FALSE(s.Final(0, 2));
  std::vector<float> g(kTwoPieces, 3.0f);
  EXPECT_TRUE(s.Add(1, 0, 0, g.data(), kPiece, 2));
  EXPECT_FALSE(s.Final(0, 2));  // its second piece waits
  EXPECT_TRUE(s.Add(1, 0, kPiece, g.data(), kTwoPieces * 4 - kPiece, 2));
  EXPECT_TRUE(s.Final(0, 2));
  EXPECT_FALSE(s.Final(1, 2));
  EXPECT_FLOAT_EQ(s.sum(0)[0].item<float>(), 2.0f);
  EXPECT_FLOAT_EQ(s.sum(0)[kTwoPieces - 1].item<float>(), 2.0f);
}

TEST(StepSumsTest, ALostWorkersPiecesStayAndTheRestAreDivided) {
  StepSums s(Params(), 3);
  AddKey0(s, 0, 1.0f, 3);
  std::vector<float> g(kTwoPieces, 4.0f);
  EXPECT_TRUE(s.Add(1, 0, 0, g.data(), kPiece, 3));  // then worker 1 is lost
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

// A piece is read where it lies in a shared-memory ring, whose offsets are
// arbitrary: an odd address sums as an aligned one does (the sanitizer
// build, in_place_ubsan_test, reports a misaligned load).
TEST(StepSumsTest, APieceAtAnOddAddressSumsAsAnAlignedOne) {
  StepSums s(Params(), 2);
  std::vector<float> g(kTwoPieces, 1.0f);
  g[5] = 3.0f;
  std::vector<char> ring(kTwoPieces * 4 + 3);
  std::memcpy(ring.data() + 3, g.data(), kTwoPieces * 4);
  const char* odd = ring.data() + 3;
  for (int w = 0; w < 2; ++w) {
    EXPECT_TRUE(s.Add(w, 0, 0, odd, kPiece, 2));
    EXPECT_TRUE(s.Add(w, 0, kPiece, odd + kPiece, kTwoPieces * 4 - kPiece, 2));
  }
  ASSERT_TRUE(s.Final(0, 2));
  EXPECT_FLOAT_EQ(s.sum(0)[5].item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(s.sum(0)[kTwoPieces - 1].item<float>(), 1.0f);
}

// A NaN or an Inf anywhere in a piece, first addend or later, is found by
// the pass that sums it; the piece does not count, so its key is never
// final (nothing steps on it) until the step is cleared.
TEST(StepSumsTest, APieceWithNanOrInfIsNotAdded) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (int first_bad : {0, 1}) {
      StepSums s(Params(), 2);
      std::vector<float> g(kTwoPieces, 1.0f);
      std::vector<float> b = g;
      b[kPiece / 4 - 1] = bad;  // the first piece's last element
      EXPECT_EQ(s.Add(0, 0, 0, (first_bad ? b : g).data(), kPiece, 2),
                !first_bad);
      EXPECT_EQ(s.Add(1, 0, 0, (first_bad ? g : b).data(), kPiece, 2),
                bool(first_bad));
      for (int w = 0; w < 2; ++w) {
        EXPECT_TRUE(s.Add(w, 0, kPiece, g.data() + kPiece / 4,
                          kTwoPieces * 4 - kPiece, 2));
      }
      EXPECT_FALSE(s.Final(0, 2)) << bad << " " << first_bad;
    }
  }
  StepSums d({torch::zeros({3}, torch::kDouble)}, 1);
  const double inf[3] = {1, std::numeric_limits<double>::infinity(), 2};
  EXPECT_FALSE(d.Add(0, 0, 0, inf, sizeof inf, 1));
  const double fine[3] = {1, 1e308, 2};
  EXPECT_TRUE(d.Add(0, 0, 0, fine, sizeof fine, 1));
  EXPECT_TRUE(d.Final(0, 1));
}

}  // namespace
}  // namespace pstrain::ps
