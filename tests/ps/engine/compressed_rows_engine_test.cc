// The rows of a row-sparse key in fp16 and bf16 at the Engine,
// without sockets (testing/engine_harness.h): a coded row push steps the
// parameters bit for bit as the decoded rows pushed raw do, in every mode;
// a malformed one is refused with its own error; and the rows a reply
// brings are coded in --pull_compression.

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
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
using KeyRows = EngineHarness::KeyRows;

constexpr int64_t kRows = 10, kDim = 8;

JobSpec Spec(Mode mode, const std::string& compression) {
  JobSpec s;
  s.mode = mode;
  s.optimizer = "adagrad";
  s.lr = 0.5;
  s.world_size = 3;  // 2 workers
  s.staleness = 1;
  s.dead_after = 0;
  s.compression = compression;
  return s;
}

// Key 0: a table [kRows, kDim], row-sparse; key 1: a bias [3].
std::vector<at::Tensor> Params() {
  torch::manual_seed(2);
  return {torch::randn({kRows, kDim}).requires_grad_(),
          torch::randn({3}).requires_grad_()};
}

const std::vector<bool> kSparse = {true, false};

std::vector<uint8_t> Encode(wire::Codec codec, const at::Tensor& rows) {
  const size_t n = static_cast<size_t>(rows.numel());
  std::vector<uint8_t> out(wire::CompressedBytes(codec, {}, n));
  wire::Encode(codec, {}, rows.contiguous().data_ptr<float>(), n, 0,
               out.data());
  return out;
}

// What the record decodes to, by DecodeAdd into zeros (the server decodes
// in place; randn's values are never 0, so no -0 can tell them apart).
at::Tensor Decode(wire::Codec codec, const std::vector<uint8_t>& record,
                  at::IntArrayRef shape) {
  at::Tensor out = torch::zeros(shape);
  wire::DecodeAdd(codec, {}, record.data(), record.size(),
                  static_cast<size_t>(out.numel()), 1.0f,
                  out.data_ptr<float>());
  return out;
}

// Worker w's rows at step t: {t, w + 4, 9} of the table (row 9 by both).
std::vector<int64_t> IdsOf(int w, int t) {
  std::vector<int64_t> ids = {t, w + 4, 9};
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// (mode, --step_timeout, --compression).
class CompressedRowsTest
    : public ::testing::TestWithParam<std::tuple<Mode, double, std::string>> {};

// Two workers, three steps: the coded job's parameters are bit for bit
// those of a raw job whose workers push the decoded rows.
TEST_P(CompressedRowsTest, StepAsTheDecodedRowsPushedRaw) {
  const auto& [mode, step_timeout, compression] = GetParam();
  JobSpec coded_spec = Spec(mode, compression);
  coded_spec.step_timeout = step_timeout;
  JobSpec raw_spec = coded_spec;
  raw_spec.compression = "none";
  auto c = CompressionOf(coded_spec);
  ASSERT_TRUE(c.ok());
  const wire::Codec codec = PushRowsCodecOf(*c, Params()[0]);
  ASSERT_NE(codec, wire::Codec::kRaw);
  EngineHarness coded(coded_spec, Params(), {}, kSparse);
  EngineHarness raw(raw_spec, Params(), {}, kSparse);
  PeerId cp[2] = {coded.JoinWorker(1), coded.JoinWorker(2)};
  PeerId rp[2] = {raw.JoinWorker(1), raw.JoinWorker(2)};
  torch::manual_seed(7);
  for (int t = 0; t < 3; ++t) {
    const uint64_t version = mode == Mode::kSync ? t : 0;
    for (int w = 0; w < 2; ++w) {
      const std::vector<int64_t> ids = IdsOf(w, t);
      const at::Tensor rows =
          torch::randn({static_cast<int64_t>(ids.size()), kDim});
      const at::Tensor bias = torch::randn({3});
      const std::vector<uint8_t> record = Encode(codec, rows);
      const at::Tensor decoded = Decode(codec, record, rows.sizes());
      ASSERT_FALSE(torch::equal(decoded, rows)) << "the codec rounds";
      Status s = coded.PushRows(cp[w], version, {at::Tensor(), bias},
                                {{0, ids, rows, codec, record}}, {{0, {1, 2}}},
                                10 + t);
      ASSERT_TRUE(s.ok()) << s.ToString();
      s = raw.PushRows(rp[w], version, {at::Tensor(), bias},
                       {{0, ids, decoded}}, {{0, {1, 2}}}, 10 + t);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    coded.Settle();
    raw.Settle();
  }
  ASSERT_EQ(coded.server().version(), raw.server().version());
  EXPECT_GE(coded.server().version(), 3u);
  EXPECT_EQ(coded.engine().Stats(0, 0).refused_pushes, 0u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(
        torch::equal(coded.server().params()[k], raw.server().params()[k]))
        << "key " << k;
  }
  EXPECT_FALSE(torch::equal(coded.server().params()[0], Params()[0]))
      << "the test can fail: the table moved";
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CompressedRowsTest,
    ::testing::Combine(::testing::Values(Mode::kSync, Mode::kAsync, Mode::kSsp),
                       ::testing::Values(0.0),
                       ::testing::Values("fp16", "bf16")),
    [](const auto& info) {
      return std::string(ModeName(std::get<0>(info.param))) + "_" +
             std::get<2>(info.param);
    });

INSTANTIATE_TEST_SUITE_P(BufferedSync, CompressedRowsTest,
                         ::testing::Combine(::testing::Values(Mode::kSync),
                                            ::testing::Values(100.0),
                                            ::testing::Values("fp16", "bf16")),
                         [](const auto& info) {
                           return std::get<2>(info.param);
                         });

// int8, topk and onebit keep the rows raw (ps::PushRowsCodecOf).
TEST(CompressedRowsRuleTest, OnlyPerElementCodecsCodeRows) {
  const at::Tensor table = Params()[0];
  for (const auto& [flag, codec] :
       std::vector<std::pair<std::string, wire::Codec>>{
           {"none", wire::Codec::kRaw},
           {"fp16", wire::Codec::kFp16},
           {"bf16", wire::Codec::kBf16},
           {"int8", wire::Codec::kRaw},
           {"topk:0.01", wire::Codec::kRaw},
           {"onebit", wire::Codec::kRaw}}) {
    JobSpec spec = Spec(Mode::kSync, flag);
    spec.compress_min_bytes = 1 << 30;  // does not apply to rows
    auto c = CompressionOf(spec);
    ASSERT_TRUE(c.ok()) << flag;
    EXPECT_EQ(PushRowsCodecOf(*c, table), codec) << flag;
    EXPECT_EQ(PushRowsCodecOf(*c, table.to(at::kDouble)), wire::Codec::kRaw);
  }
  JobSpec spec = Spec(Mode::kSync, "int8");
  spec.pull_compression = "bf16";
  auto c = CompressionOf(spec);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(PullRowsCodecOf(*c, table), wire::Codec::kBf16);
}

bool LogHas(EngineHarness& h, const std::string& text) {
  for (const auto& line : h.outbox().info) {
    if (line.find(text) != std::string::npos)
      return true;
  }
  return false;
}

// A job of one worker whose push carries `rows` of key 0: returns the
// push's status; `h` keeps the harness for the checks.
Status PushOne(const std::string& compression, const KeyRows& rows,
               std::unique_ptr<EngineHarness>* h) {
  JobSpec spec = Spec(Mode::kSync, compression);
  spec.world_size = 2;
  *h =
      std::make_unique<EngineHarness>(spec, Params(), EngineOptions{}, kSparse);
  const PeerId a = (*h)->JoinWorker(1);
  Status s =
      (*h)->PushRows(a, 0, {at::Tensor(), torch::ones({3})}, {rows}, {}, 5);
  (*h)->Settle();
  return s;
}

// A NaN among the codes is the record's content: the push is refused and
// logged with its own error, the step is skipped, the worker stays.
TEST(CompressedRowsRefusalTest, ANaNCodeSkipsTheStep) {
  const at::Tensor rows = torch::ones({2, kDim});
  std::vector<uint8_t> record = Encode(wire::Codec::kFp16, rows);
  record[6] = 0x00;
  record[7] = 0x7E;  // element 3: a quiet NaN
  std::unique_ptr<EngineHarness> h;
  ASSERT_TRUE(
      PushOne("fp16", {0, {3, 7}, rows, wire::Codec::kFp16, record}, &h).ok());
  EXPECT_EQ(h->engine().Stats(0, 0).refused_pushes, 1u);
  EXPECT_EQ(h->server().version(), 1u);  // the step closed, skipped
  EXPECT_TRUE(torch::equal(h->server().params()[0], Params()[0]));
  EXPECT_TRUE(LogHas(*h,
                     "key 0 (k0) rows: fp16: value at 3 is nan, expected a "
                     "finite value; the step is skipped"))
      << h->outbox().info.back();
  EXPECT_FALSE(h->ClosedFor(1).has_value()) << "the worker stays";
}

// A codec other than the rule's, or a record of another size, is a broken
// protocol: an error frame before any byte is read, each its own.
TEST(CompressedRowsRefusalTest, AWrongCodecIsAnError) {
  const at::Tensor rows = torch::ones({2, kDim});
  std::unique_ptr<EngineHarness> h;
  Status s = PushOne("fp16", {0, {3, 7}, rows}, &h);
  EXPECT_EQ(s.message(),
            "push_pull: rows 0 (key 0, k0) is float32 rows of 8, expected "
            "float32 rows of 8 in fp16");
  EXPECT_TRUE(LogHas(*h, "refused push_pull from rank 1: push_pull: rows 0"));
  EXPECT_TRUE(torch::equal(h->server().params()[0], Params()[0]));
  // int8's rows travel raw.
  s = PushOne(
      "int8",
      {0, {3, 7}, rows, wire::Codec::kFp16, Encode(wire::Codec::kFp16, rows)},
      &h);
  EXPECT_EQ(s.message(),
            "push_pull: rows 0 (key 0, k0) is float32 rows of 8 in fp16, "
            "expected float32 rows of 8");
  s = PushOne(
      "bf16",
      {0, {3, 7}, rows, wire::Codec::kFp16, Encode(wire::Codec::kFp16, rows)},
      &h);
  EXPECT_EQ(s.message(),
            "push_pull: rows 0 (key 0, k0) is float32 rows of 8 in fp16, "
            "expected float32 rows of 8 in bf16");
}

TEST(CompressedRowsRefusalTest, AWrongSizeIsAnError) {
  const at::Tensor rows = torch::ones({2, kDim});
  std::vector<uint8_t> record = Encode(wire::Codec::kBf16, rows);
  record.pop_back();
  std::unique_ptr<EngineHarness> h;
  Status s = PushOne("bf16", {0, {3, 7}, rows, wire::Codec::kBf16, record}, &h);
  EXPECT_EQ(s.message(),
            "push_pull: rows 0 (key 0, k0) has 31 bytes of bf16, expected 32");
  EXPECT_TRUE(torch::equal(h->server().params()[0], Params()[0]));
}

// --pull_compression fp16: the rows a push_pull asks for come back as the
// fp16 codes of the new version's rows; the bias (small) raw.
TEST(CompressedRowsPullTest, TheReplysRowsAreCoded) {
  JobSpec spec = Spec(Mode::kSync, "none");
  spec.world_size = 2;
  spec.pull_compression = "fp16";
  EngineHarness h(spec, Params(), {}, kSparse);
  const PeerId a = h.JoinWorker(1);
  torch::manual_seed(5);
  ASSERT_TRUE(h.PushRows(a, 0, {at::Tensor(), torch::randn({3})},
                         {{0, {2, 9}, torch::randn({2, kDim})}},
                         {{0, {2, 5, 9}}}, 7)
                  .ok());
  h.Settle();
  ASSERT_EQ(h.server().version(), 1u);
  const testing::FakeOutbox::Sent& reply = h.outbox().sent.back();
  ASSERT_EQ(reply.type, wire::MsgType::kParams);
  wire::Params m;
  ASSERT_TRUE(wire::DecodeMeta(reply.meta, &m).ok());
  ASSERT_EQ(m.rows.size(), 1u);
  EXPECT_EQ(m.rows[0].rows.codec, wire::Codec::kFp16);
  EXPECT_EQ(m.rows[0].rows.dims[0], 3);
  EXPECT_EQ(m.rows[0].rows.nbytes, 2u * 3 * kDim);
  ASSERT_EQ(reply.data.size(), 2u);
  EXPECT_EQ(reply.data[0].bytes, 12u);  // the bias, raw
  const at::Tensor table = h.server().params()[0].detach();
  const auto want = Encode(wire::Codec::kFp16,
                           table.index_select(0, torch::tensor({2, 5, 9})));
  ASSERT_EQ(reply.data[1].bytes, want.size());
  EXPECT_EQ(std::memcmp(reply.data[1].data, want.data(), want.size()), 0);
  EXPECT_FALSE(torch::equal(table, Params()[0])) << "the rows moved";
}

}  // namespace
}  // namespace pstrain::ps
