// The sparse rows and row requests of push, push_pull and params
// (wire/messages.h): golden bytes, round trips, and every refusal of a row
// id with its own text.

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/bytes.h"
#include "wire/messages.h"

namespace pstrain::wire {
namespace {

using pstrain::testing::Bytes;
using pstrain::testing::Desc;

std::string I64(int64_t v) {
  std::string s(8, '\0');
  EncodeFixed64(s.data(), static_cast<uint64_t>(v));
  return s;
}

template <typename M>
std::string Meta(const M& m) {
  std::string meta = "stale bytes that EncodeMeta must clear";
  EncodeMeta(m, &meta);
  return meta;
}

// Rows of key `key`: float32 [ids.size(), row_dim].
SparseRows Rows(uint32_t key, std::vector<int64_t> ids, int64_t row_dim) {
  SparseRows r;
  r.rows =
      Desc(key, DType::kFloat32, {static_cast<int64_t>(ids.size()), row_dim});
  r.ids = std::move(ids);
  return r;
}

PushPull SparsePush() {
  PushPull m;
  m.version = 9;
  m.grads = {Desc(1, DType::kFloat32, {2})};
  m.rows = {Rows(0, {1, 5}, 3)};
  m.requests = {{0, {2, 7, 9}}};
  return m;
}

// A push_pull's meta, its rows' ids given as they go on the wire.
std::string PushPullWithIds(const std::vector<int64_t>& ids) {
  std::string ids_bytes;
  for (int64_t id : ids)
    ids_bytes += I64(id);
  std::string meta = Bytes({1, 0, 0, 0, 0, 0, 0, 0,  // version
                            0, 0, 0, 0,              // no dense tensors
                            1, 0, 0, 0});            // 1 sparse record
  std::string desc(15 + 16, '\0');
  EncodeTensorDesc(
      Desc(4, DType::kFloat32, {static_cast<int64_t>(ids.size()), 2}),
      desc.data());
  return meta + desc + ids_bytes + Bytes({0, 0, 0, 0});  // no requests
}

Status Decode(const std::string& meta) {
  std::unique_ptr<char[]> copy(new char[meta.size()]);  // exact, for ASan
  std::copy(meta.begin(), meta.end(), copy.get());
  PushPull out;
  return DecodeMeta(std::string_view(copy.get(), meta.size()), &out);
}

TEST(SparseRowsTest, GoldenBytesOfPushPull) {
  EXPECT_EQ(Meta(SparsePush()),
            Bytes({9,  0, 0, 0, 0,    0,    0, 0,  // version
                   1,  0, 0, 0,                    // 1 dense tensor
                   1,  0, 0, 0, 0x01, 0x00, 1,  // key 1, float32, raw, ndim 1
                   2,  0, 0, 0, 0,    0,    0, 0,  // dims[0]
                   8,  0, 0, 0, 0,    0,    0, 0,  // nbytes
                   1,  0, 0, 0,                    // 1 sparse record
                   0,  0, 0, 0, 0x01, 0x00, 2,  // key 0, float32, raw, ndim 2
                   2,  0, 0, 0, 0,    0,    0, 0,     // dims[0]: 2 rows
                   3,  0, 0, 0, 0,    0,    0, 0,     // dims[1]: row_dim 3
                   24, 0, 0, 0, 0,    0,    0, 0,     // nbytes
                   1,  0, 0, 0, 0,    0,    0, 0,     // row id 1
                   5,  0, 0, 0, 0,    0,    0, 0,     // row id 5
                   1,  0, 0, 0,                       // 1 row request
                   0,  0, 0, 0, 3,    0,    0, 0,     // key 0, 3 ids
                   2,  0, 0, 0, 0,    0,    0, 0,     // 2
                   7,  0, 0, 0, 0,    0,    0, 0,     // 7
                   9,  0, 0, 0, 0,    0,    0, 0}));  // 9
}

TEST(SparseRowsTest, GoldenBytesOfParams) {
  Params m;
  m.version = 3;
  m.rows = {Rows(2, {4}, 1)};
  m.members = {1};
  EXPECT_EQ(Meta(m), Bytes({3, 0, 0, 0, 0,    0,    0, 0,  // version
                            0, 0, 0, 0,                    // no dense tensors
                            1, 0, 0, 0,                    // 1 sparse record
                            2, 0, 0, 0, 0x01, 0x00, 2,     // key 2, float32
                            1, 0, 0, 0, 0,    0,    0, 0,  // 1 row
                            1, 0, 0, 0, 0,    0,    0, 0,  // row_dim 1
                            4, 0, 0, 0, 0,    0,    0, 0,  // nbytes
                            4, 0, 0, 0, 0,    0,    0, 0,  // row id 4
                            1, 0, 0, 0, 1,    0,    0, 0,  // 1 member: worker 1
                            0}));                          // flags
}

TEST(SparseRowsTest, RoundTripsReusingCapacity) {
  const PushPull in = SparsePush();
  PushPull out;
  ASSERT_TRUE(DecodeMeta(Meta(in), &out).ok());
  EXPECT_EQ(out.version, 9u);
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_EQ(out.rows[0].ids, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(out.rows[0].rows.dims[1], 3);
  ASSERT_EQ(out.requests.size(), 1u);
  EXPECT_EQ(out.requests[0].ids, (std::vector<int64_t>{2, 7, 9}));
  const int64_t* ids = out.rows[0].ids.data();
  ASSERT_TRUE(DecodeMeta(Meta(in), &out).ok());
  EXPECT_EQ(out.rows[0].ids.data(), ids);  // the same storage, reused

  Params params;
  params.version = 4;
  params.rows = {Rows(0, {0, 3}, 2), Rows(1, {}, 4)};
  params.stop = true;
  Params decoded;
  ASSERT_TRUE(DecodeMeta(Meta(params), &decoded).ok());
  ASSERT_EQ(decoded.rows.size(), 2u);
  EXPECT_EQ(decoded.rows[0].ids, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(decoded.rows[1].ids.empty());
  EXPECT_TRUE(decoded.stop);
}

TEST(SparseRowsTest, ValidateFrameCountsTheRowsData) {
  const std::string meta = Meta(SparsePush());
  auto check = [&](uint64_t data) {
    FrameHeader h;
    h.type = MsgType::kPushPull;
    h.body_len = 4 + meta.size() + data;
    return ValidateFrame(h, meta, data);
  };
  EXPECT_TRUE(check(8 + 24).ok());
  EXPECT_EQ(check(8 + 25).message(),
            "push_pull: data section is 33 bytes, descriptors say 32");
  EXPECT_EQ(check(8 + 23).message(),
            "push_pull: rows 0: nbytes 24 exceeds the 23 data bytes left");
  uint64_t total = 0;
  const PushPull m = SparsePush();
  ASSERT_TRUE(DataBytes(m.grads, m.rows, &total).ok());
  EXPECT_EQ(total, 32u);
}

// Rows in fp16: the descriptor's codec byte is 1 and its
// nbytes 2 x numel, as a dense record's; the data section counts those.
TEST(SparseRowsTest, CarriesACodecOnItsRows) {
  PushPull m = SparsePush();
  m.rows[0].rows.codec = Codec::kFp16;
  m.rows[0].rows.nbytes = 2 * 2 * 3;
  const std::string meta = Meta(m);
  const std::string rows_desc =
      Bytes({0,  0, 0, 0, 0x01, 0x01, 2,       // key 0, float32, fp16, ndim 2
             2,  0, 0, 0, 0,    0,    0, 0,    // dims[0]: 2 rows
             3,  0, 0, 0, 0,    0,    0, 0,    // dims[1]: row_dim 3
             12, 0, 0, 0, 0,    0,    0, 0});  // nbytes: 2 x 6
  EXPECT_NE(meta.find(rows_desc), std::string::npos);
  PushPull out;
  ASSERT_TRUE(DecodeMeta(meta, &out).ok());
  EXPECT_EQ(out.rows[0].rows.codec, Codec::kFp16);
  EXPECT_EQ(out.rows[0].rows.nbytes, 12u);
  FrameHeader h;
  h.type = MsgType::kPushPull;
  h.body_len = 4 + meta.size() + 8 + 12;
  EXPECT_TRUE(ValidateFrame(h, meta, 8 + 12).ok());
}

TEST(SparseRowsTest, AcceptsAscendingIds) {
  EXPECT_TRUE(Decode(PushPullWithIds({})).ok());
  EXPECT_TRUE(Decode(PushPullWithIds({0, 1, 1000000})).ok());
}

TEST(SparseRowsTest, RefusesDuplicatedId) {
  EXPECT_EQ(Decode(PushPullWithIds({1, 4, 4})).message(),
            "push_pull: rows 0: row id 4 at 2 is duplicated: the id before "
            "it is the same");
}

TEST(SparseRowsTest, RefusesIdOutOfOrder) {
  EXPECT_EQ(Decode(PushPullWithIds({1, 5, 3})).message(),
            "push_pull: rows 0: row id 3 at 2 is out of order: below 5 "
            "before it (ids must ascend)");
}

TEST(SparseRowsTest, RefusesNegativeId) {
  EXPECT_EQ(Decode(PushPullWithIds({-1, 5})).message(),
            "push_pull: rows 0: row id -1 at 0 is negative");
}

TEST(SparseRowsTest, RefusesBadRequests) {
  std::string base = Meta(PushPull{1, {}});
  base.resize(base.size() - 4);  // drop "no requests"
  auto with_request = [&](const std::vector<int64_t>& ids) {
    std::string m = base + Bytes({1, 0, 0, 0, 0, 0, 0, 0});  // 1, key 0
    m += Bytes({static_cast<int>(ids.size()), 0, 0, 0});
    for (int64_t id : ids)
      m += I64(id);
    return m;
  };
  EXPECT_TRUE(Decode(with_request({3, 8})).ok());
  EXPECT_EQ(Decode(with_request({3, 3})).message(),
            "push_pull: request 0: row id 3 at 1 is duplicated: the id "
            "before it is the same");
  EXPECT_EQ(Decode(with_request({8, 3})).message(),
            "push_pull: request 0: row id 3 at 1 is out of order: below 8 "
            "before it (ids must ascend)");
  EXPECT_EQ(Decode(with_request({3, 8}).substr(0, base.size() + 20)).message(),
            "push_pull: request 0: 2 row ids need 16 bytes, 8 left");
  // A push asks for no rows: a pull returns whole tensors.
  Push push;
  EXPECT_EQ(DecodeMeta(with_request({3}), &push).message(),
            "push: 1 row requests, expected 0 (only push_pull asks for rows)");
}

TEST(SparseRowsTest, RefusesRowsOfOtherRank) {
  SparseRows r = Rows(0, {1}, 2);
  std::string meta = Bytes({1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0});
  TensorDesc flat = Desc(0, DType::kFloat32, {1});
  std::string desc(15 + 8, '\0');
  EncodeTensorDesc(flat, desc.data());
  EXPECT_EQ(Decode(meta + desc + I64(1) + Bytes({0, 0, 0, 0})).message(),
            "push_pull: rows 0: ndim 1, expected 2 ([rows, row_dim])");
}

TEST(SparseRowsTest, EveryTruncationFails) {
  const std::string meta = Meta(SparsePush());
  for (size_t n = 0; n < meta.size(); ++n) {
    Status s = Decode(meta.substr(0, n));
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << n;
    EXPECT_EQ(s.message().rfind("push_pull", 0), 0u) << s.message();
  }
}

}  // namespace
}  // namespace pstrain::wire
