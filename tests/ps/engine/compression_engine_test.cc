// Compressed pushes and pulls at the Engine, with a fake outbox:
// a record is decoded into the step's sums exactly as its decoded gradient
// would be added raw, every malformed record is refused with its own
// error, and --pull_compression replies carry the parameters' codes.

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/engine.h"
#include "ps/job/compression_spec.h"
#include "testing/engine_harness.h"
#include "wire/compression.h"

namespace pstrain::ps {
namespace {

using testing::EngineHarness;
using Record = EngineHarness::Record;
using testing::FakeOutbox;

// Key 0 spans two pieces (kPieceBytes is 512 KiB) and is compressed; key 1
// is below --compress_min_bytes and travels raw.
constexpr int64_t kBig = 200000;

JobSpec Spec(Mode mode, const std::string& compression) {
  JobSpec s;
  s.mode = mode;
  s.lr = 0.5;
  s.momentum = 0;
  s.world_size = 3;
  s.dead_after = 0;
  s.compression = compression;
  return s;
}

std::vector<at::Tensor> Params() {
  return {torch::zeros({kBig}).requires_grad_(),
          torch::zeros({3}).requires_grad_()};
}

std::vector<uint8_t> RawBytes(const at::Tensor& t) {
  std::vector<uint8_t> b(t.nbytes());
  std::memcpy(b.data(), t.data_ptr(), b.size());
  return b;
}

struct Coded {
  wire::Codec codec;
  wire::CodecParams params;
};

Coded CodecOf(const JobSpec& spec) {
  auto c = CompressionOf(spec);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return {c->push, c->params};
}

std::vector<uint8_t> Encode(const Coded& c, const at::Tensor& g,
                            uint64_t seed) {
  const size_t n = static_cast<size_t>(g.numel());
  std::vector<uint8_t> out(wire::CompressedBytes(c.codec, c.params, n));
  wire::Encode(c.codec, c.params, g.data_ptr<float>(), n, seed, out.data());
  return out;
}

at::Tensor Decode(const Coded& c, const std::vector<uint8_t>& record,
                  int64_t n) {
  at::Tensor out = torch::zeros({n});
  wire::DecodeAdd(c.codec, c.params, record.data(), record.size(),
                  static_cast<size_t>(n), 1.0f, out.data_ptr<float>());
  return out;
}

// (mode, --step_timeout, --compression).
class CompressedPushTest
    : public ::testing::TestWithParam<std::tuple<Mode, double, std::string>> {};

// Two workers, two steps: the compressed job's parameters are bit for bit
// those of a raw job whose workers push the decoded gradients.
TEST_P(CompressedPushTest, StepsAsTheDecodedGradientsPushedRaw) {
  const auto& [mode, step_timeout, compression] = GetParam();
  JobSpec coded_spec = Spec(mode, compression);
  coded_spec.step_timeout = step_timeout;
  JobSpec raw_spec = coded_spec;
  raw_spec.compression = "none";
  const Coded c = CodecOf(coded_spec);
  EngineHarness coded(coded_spec, Params()), raw(raw_spec, Params());
  auto ca = coded.JoinWorker(1), cb = coded.JoinWorker(2);
  auto ra = raw.JoinWorker(1), rb = raw.JoinWorker(2);
  torch::manual_seed(7);
  for (uint64_t step = 0; step < 2; ++step) {
    const uint64_t version = mode == Mode::kSync ? step : 0;
    int worker = 0;
    for (auto [cp, rp] : {std::pair{ca, ra}, std::pair{cb, rb}}) {
      const at::Tensor g = torch::randn({kBig});
      const at::Tensor small = torch::randn({3});
      const auto record = Encode(c, g, 100 * step + worker++);
      ASSERT_TRUE(coded
                      .PushRecords(cp, version,
                                   {{c.codec, record},
                                    {wire::Codec::kRaw, RawBytes(small)}},
                                   10 + step)
                      .ok());
      ASSERT_TRUE(
          raw.Push(rp, version, {Decode(c, record, kBig), small}, 10 + step)
              .ok());
      coded.Settle();
      raw.Settle();
    }
  }
  ASSERT_EQ(coded.server().version(), raw.server().version());
  EXPECT_GT(coded.server().version(), 1u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(
        torch::equal(coded.server().params()[k], raw.server().params()[k]))
        << "key " << k;
  }
  EXPECT_GT(coded.server().params()[0].abs().max().item<float>(), 0.1f)
      << "the test can fail: the parameters moved";
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, CompressedPushTest,
    ::testing::Combine(::testing::Values(Mode::kSync, Mode::kAsync),
                       ::testing::Values(0.0),
                       ::testing::Values("fp16", "bf16", "int8", "topk:0.01",
                                         "onebit")),
    [](const auto& info) {
      std::string codec = std::get<2>(info.param);
      codec = codec.substr(0, codec.find(':'));
      return std::string(ModeName(std::get<0>(info.param))) + "_" + codec;
    });

INSTANTIATE_TEST_SUITE_P(
    BufferedSync, CompressedPushTest,
    ::testing::Combine(::testing::Values(Mode::kSync), ::testing::Values(100.0),
                       ::testing::Values("int8", "topk:0.01")),
    [](const auto& info) {
      std::string codec = std::get<2>(info.param);
      return codec.substr(0, codec.find(':'));
    });

// A malformed record: its codec, how it is spoiled, and its error.
struct Malformed {
  const char* name;
  const char* compression;
  void (*spoil)(std::vector<uint8_t>* record);
  const char* error;
};

uint32_t* Indices(std::vector<uint8_t>* r) {
  return reinterpret_cast<uint32_t*>(r->data());
}

float* Floats(std::vector<uint8_t>* r) {
  return reinterpret_cast<float*>(r->data());
}

const Malformed kMalformed[] = {
    {"IndexOutOfRange", "topk:0.01", [](auto* r) { Indices(r)[1999] = kBig; },
     "topk: index 200000 at 1999 is out of range: the tensor has 200000 "
     "elements"},
    {"RepeatedIndex", "topk:0.01",
     [](auto* r) { Indices(r)[1] = Indices(r)[0]; },
     "is repeated: the index before it is the same"},
    {"UnsortedIndex", "topk:0.01",
     [](auto* r) { std::swap(Indices(r)[0], Indices(r)[1]); },
     "is out of order"},
    {"NaNValue", "topk:0.01",
     [](auto* r) { Floats(r)[2000] = std::numeric_limits<float>::quiet_NaN(); },
     "is nan, expected a finite value"},
    {"NaNScaleInt8", "int8",
     [](auto* r) { Floats(r)[1] = std::numeric_limits<float>::quiet_NaN(); },
     "int8: scale of chunk 1 is nan, expected a finite value"},
    {"NegativeScaleOneBit", "onebit", [](auto* r) { Floats(r)[0] = -2; },
     "onebit: scale of chunk 0 is -2, expected >= 0"},
    {"InfValueFp16", "fp16",
     [](auto* r) {
       (*r)[6] = 0x00;
       (*r)[7] = 0x7C;  // +inf
     },
     "fp16: value at 3 is inf, expected a finite value"},
};

class MalformedRecordTest : public ::testing::TestWithParam<Malformed> {};

// The push is refused and logged with the record's own error, the step
// goes on without it (skipped, as for a NaN), and the server lives on.
TEST_P(MalformedRecordTest, IsRefusedWithItsOwnError) {
  const Malformed& m = GetParam();
  JobSpec spec = Spec(Mode::kSync, m.compression);
  spec.world_size = 2;
  const Coded c = CodecOf(spec);
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1);
  auto record = Encode(c, torch::randn({kBig}), 1);
  m.spoil(&record);
  const std::vector<Record> push = {
      {c.codec, record}, {wire::Codec::kRaw, RawBytes(torch::ones({3}))}};
  ASSERT_TRUE(h.PushRecords(a, 0, push, 10).ok());
  h.Settle();
  EXPECT_EQ(h.engine().Stats(0, 0).refused_pushes, 1u);
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_EQ(h.server().params()[0].abs().max().item<float>(), 0.0f);
  ASSERT_FALSE(h.outbox().info.empty());
  EXPECT_NE(h.outbox().info.back().find(m.error), std::string::npos)
      << h.outbox().info.back();
  EXPECT_FALSE(h.ClosedFor(a).has_value()) << "the worker stays";
}

INSTANTIATE_TEST_SUITE_P(Records, MalformedRecordTest,
                         ::testing::ValuesIn(kMalformed),
                         [](const auto& info) { return info.param.name; });

// A record whose length is not the codec's for the key, or in another
// codec than the job's, is a broken protocol: an error frame, not a step.
TEST(MalformedRecordTest, AWrongLengthOrCodecIsAnError) {
  JobSpec spec = Spec(Mode::kSync, "int8");
  spec.world_size = 2;
  const Coded c = CodecOf(spec);
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1);
  auto record = Encode(c, torch::randn({kBig}), 1);
  record.pop_back();
  Status s = h.PushRecords(
      a, 0,
      {{c.codec, record}, {wire::Codec::kRaw, RawBytes(torch::ones({3}))}}, 10);
  EXPECT_NE(s.message().find("push_pull: tensor 0 (key 0) has 203127 bytes of "
                             "int8, expected 203128"),
            std::string::npos)
      << s.ToString();

  EngineHarness h2(spec, Params());
  auto b = h2.JoinWorker(1);
  const Coded fp16{wire::Codec::kFp16, {}};
  s = h2.PushRecords(b, 0,
                     {{fp16.codec, Encode(fp16, torch::randn({kBig}), 1)},
                      {wire::Codec::kRaw, RawBytes(torch::ones({3}))}},
                     10);
  EXPECT_NE(s.message().find("float32 [200000] in fp16, expected key 0 "
                             "float32 [200000] in int8"),
            std::string::npos)
      << s.ToString();
}

// --pull_compression fp16: the reply's key 0 is the fp16 code of the
// stepped parameters, and key 1 (small) travels raw.
TEST(PullCompressionTest, RepliesCarryTheCodesOfTheSteppedParameters) {
  JobSpec spec = Spec(Mode::kSync, "none");
  spec.world_size = 2;
  spec.pull_compression = "fp16";
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1);
  ASSERT_TRUE(h.Push(a, 0, {torch::randn({kBig}), torch::ones({3})}, 10).ok());
  h.Settle();
  ASSERT_EQ(h.server().version(), 1u);
  const FakeOutbox::Sent& reply = h.outbox().sent.back();
  ASSERT_EQ(reply.type, wire::MsgType::kParams);
  ASSERT_EQ(reply.data.size(), 2u);
  const Coded fp16{wire::Codec::kFp16, {}};
  const auto want = Encode(fp16, h.server().params()[0].detach(), 0);
  ASSERT_EQ(reply.data[0].bytes, want.size());
  EXPECT_EQ(std::memcmp(reply.data[0].data, want.data(), want.size()), 0);
  EXPECT_EQ(reply.data[1].bytes, 12u);
  EXPECT_GT(h.server().params()[0].abs().max().item<float>(), 0.1f);
}

}  // namespace
}  // namespace pstrain::ps
