#include "wire/error_feedback.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "wire/compression.h"

namespace pstrain::wire {
namespace {

constexpr Codec kLossyCodecs[] = {Codec::kFp16, Codec::kBf16, Codec::kInt8,
                                  Codec::kTopK, Codec::kOneBit};

CodecParams Params() {
  CodecParams p;
  p.chunk = 64;
  p.ratio = 0.01;
  return p;
}

// K steps of one key: what a server's accumulator receives (every push
// decoded into it, as the server will) against the gradients' own sum.
struct Totals {
  std::vector<float> pushed;    // sum of decoded pushes, float32 as a server
  std::vector<double> grads;    // sum of gradients
  std::vector<float> residual;  // the worker's residual after the last step
};

Totals Steps(Codec codec, bool enabled, int steps, size_t n) {
  const CodecParams p = Params();
  ErrorFeedback ef({n}, enabled);
  Totals run{std::vector<float>(n, 0.0f), std::vector<double>(n, 0.0), {}};
  std::mt19937 gen(17);
  std::vector<uint8_t> wire(CompressedBytes(codec, p, n));
  std::vector<float> grad(n);
  for (int t = 0; t < steps; ++t) {
    // Gradients whose scale drifts from step to step, as training's do.
    std::normal_distribution<float> dist(0.1f, 1.0f + 0.05f * t);
    for (size_t i = 0; i < n; ++i) {
      grad[i] = dist(gen);
      run.grads[i] += grad[i];
    }
    const size_t bytes =
        ef.Compress(0, codec, p, grad.data(), n, 1000 + t, wire.data());
    EXPECT_EQ(bytes, wire.size());
    EXPECT_TRUE(Validate(codec, p, wire.data(), bytes, n).ok());
    DecodeAdd(codec, p, wire.data(), bytes, n, 1.0f, run.pushed.data());
  }
  run.residual = ef.residual(0);
  return run;
}

double MaxAbs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

// Nothing is lost, only delayed: after K = 50 steps the sum of the pushes
// equals the sum of the gradients minus the residual the worker holds.
TEST(ErrorFeedbackTest, PushesSumToGradientsMinusResidual) {
  const size_t n = 1003;  // a short last chunk
  for (Codec codec : kLossyCodecs) {
    const Totals run = Steps(codec, /*enabled=*/true, 50, n);
    ASSERT_EQ(run.residual.size(), n);
    const double tolerance = 1e-4 * MaxAbs(run.grads);
    double max_residual = 0;
    for (size_t i = 0; i < n; ++i) {
      const double want = run.grads[i] - run.residual[i];
      ASSERT_NEAR(run.pushed[i], want, tolerance)
          << CodecName(codec) << " element " << i;
      max_residual = std::max(max_residual, std::fabs(double{run.residual[i]}));
    }
    EXPECT_GT(max_residual, 0) << CodecName(codec) << " lost nothing?";
  }
}

TEST(ErrorFeedbackTest, OffCarriesNoResidual) {
  const size_t n = 1003;
  for (Codec codec : kLossyCodecs) {
    const Totals run = Steps(codec, /*enabled=*/false, 50, n);
    EXPECT_TRUE(run.residual.empty()) << CodecName(codec);
  }
  // Without memory topk drops 99% of every step for good: the identity,
  // which with a zero residual says pushes == gradients, fails by far.
  const Totals off = Steps(Codec::kTopK, /*enabled=*/false, 50, n);
  const Totals on = Steps(Codec::kTopK, /*enabled=*/true, 50, n);
  double off_error = 0, on_error = 0;
  for (size_t i = 0; i < n; ++i) {
    off_error = std::max(off_error, std::fabs(off.pushed[i] - off.grads[i]));
    on_error = std::max(on_error, std::fabs(on.pushed[i] - on.grads[i]));
  }
  EXPECT_GT(off_error, 0.1 * MaxAbs(off.grads));
  // With memory the gap is the residual: smaller than without.
  EXPECT_LT(on_error, off_error);
}

TEST(ErrorFeedbackTest, OffEncodesTheGradientItself) {
  const std::vector<float> grad = {1.0f, -2.0f, 0.5f, 0.0f};
  CodecParams p;
  p.ratio = 0.5;
  ErrorFeedback ef({4}, /*enabled=*/false);
  for (int step = 0; step < 2; ++step) {
    std::vector<uint8_t> a(CompressedBytes(Codec::kTopK, p, 4));
    std::vector<uint8_t> b(a.size());
    ef.Compress(0, Codec::kTopK, p, grad.data(), 4, 0, a.data());
    Encode(Codec::kTopK, p, grad.data(), 4, 0, b.data());
    EXPECT_EQ(a, b) << "step " << step;
  }
}

TEST(ErrorFeedbackTest, ResidualIsWhatTheCodecDropped) {
  // topk of 2 in 4: the two small elements stay behind, then are sent.
  const std::vector<float> grad = {1.0f, -2.0f, 0.5f, 0.25f};
  CodecParams p;
  p.ratio = 0.5;
  ErrorFeedback ef({3, 4}, /*enabled=*/true);
  EXPECT_EQ(ef.size(), 2u);
  EXPECT_EQ(ef.residual(1), std::vector<float>(4, 0.0f));
  std::vector<uint8_t> out(CompressedBytes(Codec::kTopK, p, 4));
  ef.Compress(1, Codec::kTopK, p, grad.data(), 4, 0, out.data());
  EXPECT_EQ(ef.residual(1), std::vector<float>({0, 0, 0.5f, 0.25f}));
  EXPECT_EQ(ef.residual(0), std::vector<float>(3, 0.0f));  // untouched
  const std::vector<float> zero(4, 0.0f);
  ef.Compress(1, Codec::kTopK, p, zero.data(), 4, 0, out.data());
  EXPECT_EQ(ef.residual(1), zero);  // the leftovers went out this time
  std::vector<float> sent(4, 0.0f);
  DecodeAdd(Codec::kTopK, p, out.data(), out.size(), 4, 1.0f, sent.data());
  EXPECT_EQ(sent, std::vector<float>({0, 0, 0.5f, 0.25f}));
  ef.Compress(1, Codec::kTopK, p, grad.data(), 4, 0, out.data());
  ef.Reset();
  EXPECT_EQ(ef.residual(1), zero);
}

TEST(ErrorFeedbackTest, RawLeavesNoResidual) {
  const std::vector<float> grad = {1.0f, -2.0f, 0.1f};
  ErrorFeedback ef({3}, /*enabled=*/true);
  std::vector<uint8_t> out(12);
  ef.Compress(0, Codec::kRaw, CodecParams(), grad.data(), 3, 0, out.data());
  EXPECT_EQ(ef.residual(0), std::vector<float>(3, 0.0f));
}

}  // namespace
}  // namespace pstrain::wire
