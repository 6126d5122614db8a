// ParamsReply: a params reply's meta is checked against the attached
// tensors and slots, each piece gets the buffer it lands in, and landing
// a piece decodes a record in place or writes rows into their table.

#include "worker/params_reply.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/job/tensor_codec.h"
#include "wire/compression.h"

namespace pstrain::worker {
namespace {

std::string EncodedReply(const wire::Params& msg) {
  std::string meta;
  wire::EncodeMeta(msg, &meta);
  return meta;
}

// Two dense keys: float32 [2, 3] and [4].
std::vector<at::Tensor> ReplyTargets() {
  return {torch::zeros({2, 3}), torch::zeros({4})};
}

// The record of `values` (float32) in `codec`.
std::vector<uint8_t> RecordOf(wire::Codec codec, std::vector<float> values) {
  std::vector<uint8_t> record(wire::CompressedBytes(codec, {}, values.size()));
  wire::Encode(codec, {}, values.data(), values.size(), 0, record.data());
  return record;
}

// A reply of `params`' keys in the order `keys`, key 1 (float32 [4]) as
// an fp16 record.
wire::Params Fp16Reply(const std::vector<at::Tensor>& params,
                       const std::vector<uint32_t>& keys) {
  wire::Params msg;
  for (uint32_t k : keys) {
    msg.params.push_back(ps::DescribeTensor(k, params[k]));
    if (k == 1) {
      msg.params.back().codec = wire::Codec::kFp16;
      msg.params.back().nbytes =
          wire::CompressedBytes(wire::Codec::kFp16, {}, 4);
    }
  }
  return msg;
}

TEST(ParamsReplyTest, PlansDenseKeysInTheOrderTheyCome) {
  std::vector<at::Tensor> params = ReplyTargets();
  wire::Params msg;
  msg.version = 7;
  msg.members = {1, 2};
  msg.params = {ps::DescribeTensor(1, params[1]),
                ps::DescribeTensor(0, params[0])};
  ParamsReply reply;
  ASSERT_TRUE(reply.Decode(EncodedReply(msg)).ok());
  std::vector<asio::mutable_buffer> dst;
  ASSERT_TRUE(reply.Plan(params, nullptr, &dst).ok());
  EXPECT_EQ(reply.meta().version, 7u);
  EXPECT_EQ(reply.meta().members, (std::vector<uint32_t>{1, 2}));
  ASSERT_EQ(dst.size(), 2u);
  ASSERT_EQ(reply.pieces(), 2u);
  EXPECT_EQ(dst[0].data(), params[1].data_ptr());
  EXPECT_EQ(dst[0].size(), 16u);
  EXPECT_EQ(dst[1].data(), params[0].data_ptr());
  EXPECT_EQ(dst[1].size(), 24u);
  EXPECT_EQ(reply.key(0), 1);
  EXPECT_EQ(reply.key(1), 0);
  EXPECT_TRUE(reply.Finish(true, params, nullptr).ok());
}

TEST(ParamsReplyTest, RefusesAReplyOfOtherKeys) {
  std::vector<at::Tensor> params = ReplyTargets();
  ParamsReply reply;
  std::vector<asio::mutable_buffer> dst;
  wire::Params one;
  one.params = {ps::DescribeTensor(0, params[0])};
  ASSERT_TRUE(reply.Decode(EncodedReply(one)).ok());
  Status s = reply.Plan(params, nullptr, &dst);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "params carries 1 tensors, expected 2");

  wire::Params twice;
  twice.params = {ps::DescribeTensor(0, params[0]),
                  ps::DescribeTensor(0, params[0])};
  ASSERT_TRUE(reply.Decode(EncodedReply(twice)).ok());
  s = reply.Plan(params, nullptr, &dst);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "params: tensor of key 0 twice");
}

TEST(ParamsReplyTest, RefusesACodecNotAskedFor) {
  std::vector<at::Tensor> params = ReplyTargets();
  const wire::Params msg = Fp16Reply(params, {0, 1});
  ParamsReply reply;  // raw only
  ASSERT_TRUE(reply.Decode(EncodedReply(msg)).ok());
  std::vector<asio::mutable_buffer> dst;
  EXPECT_EQ(reply.Plan(params, nullptr, &dst).code(), StatusCode::kCorruption);
}

TEST(ParamsReplyTest, DecodesARecordInTheTensorItLandsIn) {
  std::vector<at::Tensor> params = ReplyTargets();
  const std::vector<uint8_t> record =
      RecordOf(wire::Codec::kFp16, {0.5f, -1.0f, 2.0f, 0.25f});
  const wire::Params msg = Fp16Reply(params, {0, 1});
  ParamsReply reply;
  reply.set_pull_codec(wire::Codec::kFp16);
  ASSERT_TRUE(reply.Decode(EncodedReply(msg)).ok());
  std::vector<asio::mutable_buffer> dst;
  ASSERT_TRUE(reply.Plan(params, nullptr, &dst).ok());
  ASSERT_EQ(dst.size(), 2u);
  // The record is read into the front of its tensor: 8 bytes of 16.
  EXPECT_EQ(dst[1].data(), params[1].data_ptr());
  ASSERT_EQ(dst[1].size(), 8u);
  std::memcpy(dst[1].data(), record.data(), record.size());
  reply.Land(1, params, nullptr);
  EXPECT_TRUE(
      torch::equal(params[1], torch::tensor({0.5f, -1.0f, 2.0f, 0.25f})));
  EXPECT_TRUE(reply.Finish(false, params, nullptr).ok());
}

TEST(ParamsReplyTest, KeepsTheFirstBadRecordUntilFinish) {
  std::vector<at::Tensor> params = ReplyTargets();
  std::vector<uint8_t> record =
      RecordOf(wire::Codec::kFp16, {1.0f, 1.0f, 1.0f, 1.0f});
  record[2] = 0x00;  // element 1: fp16 NaN, 0x7e00
  record[3] = 0x7e;
  const wire::Params msg = Fp16Reply(params, {1, 0});
  ParamsReply reply;
  reply.set_pull_codec(wire::Codec::kFp16);
  ASSERT_TRUE(reply.Decode(EncodedReply(msg)).ok());
  std::vector<asio::mutable_buffer> dst;
  ASSERT_TRUE(reply.Plan(params, nullptr, &dst).ok());
  std::memcpy(dst[0].data(), record.data(), record.size());
  // Not landed piece by piece: Finish lands them all, then reports.
  Status s = reply.Finish(true, params, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message().rfind("params: key 1: fp16: value at 1 is nan", 0), 0u)
      << s.message();
  EXPECT_TRUE(reply.Finish(false, params, nullptr).ok()) << "not forgotten";
}

TEST(ParamsReplyTest, WritesRowsIntoTheirTable) {
  std::vector<at::Tensor> params = {torch::zeros({5, 2}), torch::zeros({4})};
  std::vector<SparseSlot> slots(1);
  slots[0].key = 0;
  wire::Params msg;
  msg.params = {ps::DescribeTensor(1, params[1])};
  wire::SparseRows rows;
  rows.rows = ps::DescribeTensor(0, torch::zeros({2, 2}));
  rows.ids = {1, 3};
  msg.rows = {rows};
  ParamsReply reply;
  ASSERT_TRUE(reply.Decode(EncodedReply(msg)).ok());
  std::vector<asio::mutable_buffer> dst;
  ASSERT_TRUE(reply.Plan(params, &slots, &dst).ok());
  ASSERT_EQ(dst.size(), 2u);
  EXPECT_EQ(reply.key(1), 0);
  ASSERT_EQ(slots[0].reply_rows.sizes(), (at::IntArrayRef{2, 2}));
  EXPECT_EQ(dst[1].data(), slots[0].reply_rows.data_ptr());
  const float got[4] = {1, 2, 3, 4};
  std::memcpy(dst[1].data(), got, sizeof(got));
  reply.Land(1, params, &slots);
  EXPECT_TRUE(torch::equal(params[0], torch::tensor({0.f, 0.f, 1.f, 2.f, 0.f,
                                                     0.f, 3.f, 4.f, 0.f, 0.f})
                                          .view({5, 2})));
}

TEST(ParamsReplyTest, RefusesRowsNotAskedFor) {
  std::vector<at::Tensor> params = {torch::zeros({5, 2}), torch::zeros({4})};
  wire::Params msg;
  msg.params = {ps::DescribeTensor(1, params[1])};
  wire::SparseRows rows;
  rows.rows = ps::DescribeTensor(0, torch::zeros({1, 2}));
  rows.ids = {4};
  msg.rows = {rows};
  ParamsReply reply;
  ASSERT_TRUE(reply.Decode(EncodedReply(msg)).ok());
  std::vector<asio::mutable_buffer> dst;
  Status s = reply.Plan(params, nullptr, &dst);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "params: rows 0 of key 0 were not asked for");
}

TEST(ParamsReplyTest, ABatchDoneStandsForTheLastReply) {
  ParamsReply reply;
  wire::Params msg;
  msg.members = {3};
  ASSERT_TRUE(reply.Decode(EncodedReply(msg)).ok());
  reply.TakeBatchDone(12, true);
  EXPECT_EQ(reply.meta().version, 12u);
  EXPECT_TRUE(reply.meta().stop);
  EXPECT_TRUE(reply.meta().members.empty());
}

}  // namespace
}  // namespace pstrain::worker
