#include "wire/messages.h"

#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/bytes.h"

namespace pstrain::wire {
namespace {

using pstrain::testing::Bytes;

std::string U64(uint64_t v) {
  std::string s(8, '\0');
  EncodeFixed64(s.data(), v);
  return s;
}

std::string U32(uint32_t v) {
  std::string s(4, '\0');
  EncodeFixed32(s.data(), v);
  return s;
}

template <typename M>
std::string Meta(const M& m) {
  std::string meta = "stale bytes that EncodeMeta must clear";
  EncodeMeta(m, &meta);
  return meta;
}

using pstrain::testing::Desc;

template <typename M>
const char* NameOf(const M& m) {
  return MsgTypeName(TypeOf(m));
}

template <typename M>
void ExpectCorrupt(const std::string& meta, const std::string& message) {
  M out;
  Status s = DecodeMeta(meta, &out);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << message;
  EXPECT_EQ(s.message(), message);
}

using pstrain::testing::ExpectSameDescs;

TEST(MessagesTest, GoldenBytesOfEveryMessage) {
  EXPECT_EQ(Meta(Hello{Role::kWorker, 3, 5}),
            Bytes({0x02, 3, 0, 0, 0, 5, 0, 0, 0,  // role, rank, world_size
                   0x00, 0, 0, 0, 0,              // no claim, claimant
                   0,    0, 0, 0, 0, 0, 0, 0}));  // version
  EXPECT_EQ(Meta(Hello{Role::kServer, 1, 5, Claim::kCopy, 2, 0x0102}),
            Bytes({0x01, 1,    0, 0, 0, 5, 0, 0, 0,  // server 1
                   0x02, 2,    0, 0, 0,              // a copy, from rank 2
                   0x02, 0x01, 0, 0, 0, 0, 0, 0}));  // of version 0x0102
  EXPECT_EQ(Meta(ErrorMsg{StatusCode::kTimeout, "late"}),
            Bytes({0x05, 0x00, 4, 0, 0, 0}) + "late");
  EXPECT_EQ(Meta(GetJob{}), "");
  EXPECT_EQ(Meta(JobSpecMsg{"{}"}), Bytes({2, 0, 0, 0}) + "{}");
  Register reg;
  reg.keys = {{"w", DType::kFloat32, {2, 3}}, {"b", DType::kInt64, {}}};
  EXPECT_EQ(Meta(reg), Bytes({2,    0,    0, 0,       // count
                              1,    0,    0, 0, 'w',  // name
                              0x01, 0x02,             // float32, ndim 2
                              2,    0,    0, 0, 0,   0, 0, 0,  // dims[0]
                              3,    0,    0, 0, 0,   0, 0, 0,  // dims[1]
                              1,    0,    0, 0, 'b',           // name
                              0x05, 0x00}));                   // int64, ndim 0
  EXPECT_EQ(Meta(Ack{}), "");
  EXPECT_EQ(Meta(Pull{0x0102030405060708ull}), Bytes({8, 7, 6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(Meta(PushPull{9, {Desc(7, DType::kFloat32, {3})}}),
            Bytes({9,  0, 0, 0, 0,    0,    0, 0,  // version
                   1,  0, 0, 0,                    // count
                   7,  0, 0, 0, 0x01, 0x00, 1,     // key, float32, raw, ndim
                   3,  0, 0, 0, 0,    0,    0, 0,  // dims[0]
                   12, 0, 0, 0, 0,    0,    0, 0,  // nbytes
                   0,  0, 0, 0,                    // no sparse rows
                   0,  0, 0, 0}));                 // no row requests
  EXPECT_EQ(Meta(Params{2, {Desc(1, DType::kBFloat16, {})}, {}}),
            Bytes({2, 0, 0, 0, 0,    0,    0, 0, 1, 0, 0, 0,  // version, count
                   1, 0, 0, 0, 0x04, 0x00, 0,     // key, bf16, ndim 0
                   2, 0, 0, 0, 0,    0,    0, 0,  // nbytes
                   0, 0, 0, 0,                    // no sparse rows
                   0, 0, 0, 0,                    // members
                   0}));                          // flags
  EXPECT_EQ(Meta(Params{2, {}, {0, 2}, true}),
            Bytes({2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // version, count
                   0, 0, 0, 0,                          // no sparse rows
                   2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,  // 2 members: 0, 2
                   1}));                                // flags: stop
  EXPECT_EQ(Meta(Snapshot{0x0102030405060708ull, true}),
            Bytes({8, 7, 6, 5, 4, 3, 2, 1, 1}));  // min_version, flags
  EXPECT_EQ(Meta(Done{"ok"}), Bytes({2, 0, 0, 0}) + "ok");
  EXPECT_EQ(Meta(Push{5, {Desc(2, DType::kInt32, {1})}}),
            Bytes({5, 0, 0, 0, 0,    0,    0, 0, 1, 0, 0, 0,  // version, count
                   2, 0, 0, 0, 0x06, 0x00, 1,        // key, int32, raw, ndim
                   1, 0, 0, 0, 0,    0,    0, 0,     // dims[0]
                   4, 0, 0, 0, 0,    0,    0, 0,     // nbytes
                   0, 0, 0, 0, 0,    0,    0, 0}));  // no rows, no requests
  const std::string a(32, 'a'), b(32, 'b');
  EXPECT_EQ(Meta(AuthHello{a}), Bytes({32, 0, 0, 0}) + a);
  EXPECT_EQ(Meta(Challenge{a, b}),
            Bytes({32, 0, 0, 0}) + a + Bytes({32, 0, 0, 0}) + b);
  EXPECT_EQ(Meta(Auth{b}), Bytes({32, 0, 0, 0}) + b);
  EXPECT_EQ(Meta(GetModule{}), "");
  const std::string sha =  // SHA-256 of "abc"
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  EXPECT_EQ(Meta(ModuleMsg{sha, Desc(0, DType::kUInt8, {3})}),
            Bytes({64, 0, 0, 0}) + sha +              // sha256
                Bytes({0, 0, 0, 0, 0x08, 0x00, 1,     // key 0, uint8, raw, ndim
                       3, 0, 0, 0, 0,    0,    0, 0,  // dims[0]
                       3, 0, 0, 0, 0,    0,    0, 0}));  // nbytes
}

TEST(MessagesTest, AuthFieldsMustBe32Bytes) {
  AuthHello hello;
  EXPECT_EQ(
      DecodeMeta(Bytes({31, 0, 0, 0}) + std::string(31, 'a'), &hello).message(),
      "auth_hello: nonce of 31 bytes, expected 32");
  Challenge challenge;
  EXPECT_EQ(DecodeMeta(Bytes({32, 0, 0, 0}) + std::string(32, 'a') +
                           Bytes({0xFF, 0xFF, 0xFF, 0xFF}),
                       &challenge)
                .message(),
            "challenge: proof of 4294967295 bytes, expected 32");
  Auth auth;
  EXPECT_EQ(DecodeMeta(Bytes({32, 0, 0, 0}) + std::string(32, 'b') + "?", &auth)
                .message(),
            "auth: 1 trailing byte");
  EXPECT_TRUE(DecodeMeta(Meta(Auth{std::string(32, 'b')}), &auth).ok());
  EXPECT_EQ(auth.proof, std::string(32, 'b'));
  EXPECT_EQ(Meta(ServerInfo{"h:9"}), Bytes({3, 0, 0, 0}) + "h:9");
  EXPECT_EQ(Meta(Heartbeat{}), Bytes({0, 0, 0, 0}));
  EXPECT_EQ(Meta(Heartbeat{R"({"steps":3})"}),
            Bytes({11, 0, 0, 0}) + R"({"steps":3})");
  EXPECT_EQ(Meta(Shard{6, {Desc(0, DType::kFloat32, {})}}),
            Bytes({6, 0, 0, 0, 0,    0,    0, 0, 1, 0, 0, 0,  // version, count
                   0, 0, 0, 0, 0x01, 0x00, 0,        // key, float32, ndim 0
                   4, 0, 0, 0, 0,    0,    0, 0}));  // nbytes
}

TEST(MessagesTest, GoldenFramePrefix) {
  std::string out = "stale";
  EncodeFramePrefix(MsgType::kHello, 0x0A0B, Meta(Hello{Role::kServer, 0, 2}),
                    0, &out);
  EXPECT_EQ(out, Bytes({0x50, 0x53, 0x54, 0x52, 0x0c, 0x00, 0x01, 0x00,  //
                        0x00, 0x00, 0x00, 0x00,                          //
                        26,   0,    0,    0,    0,    0,    0,    0,     //
                        0x0B, 0x0A, 0,    0,    0,    0,    0,    0,     //
                        22,   0,    0,    0,                             //
                        0x01, 0,    0,    0,    0,    2,    0,    0,
                        0,    0,    0,    0,    0,    0,  //
                        0,    0,    0,    0,    0,    0,    0,    0}));
  EncodeFramePrefix(MsgType::kParams, 1, "", 1000, &out);
  EXPECT_EQ(out.size(), kFrameHeaderBytes + kMetaLenBytes);
  EXPECT_EQ(DecodeFixed64(out.data() + 12), 1004u);  // body_len
}

TEST(MessagesTest, RoundTripsScalarMessages) {
  Hello hello;
  ASSERT_TRUE(DecodeMeta(Meta(Hello{Role::kTool, 7, 9}), &hello).ok());
  EXPECT_EQ(hello.role, Role::kTool);
  EXPECT_EQ(hello.rank, 7u);
  EXPECT_EQ(hello.world_size, 9u);
  EXPECT_EQ(hello.claim, Claim::kNone);
  ASSERT_TRUE(
      DecodeMeta(Meta(Hello{Role::kServer, 1, 3, Claim::kNoCopy, 1, 0}), &hello)
          .ok());
  EXPECT_EQ(hello.claim, Claim::kNoCopy);
  EXPECT_EQ(hello.claimant, 1u);
  ErrorMsg err;
  ASSERT_TRUE(
      DecodeMeta(Meta(ErrorMsg{StatusCode::kIncompatible, "v2"}), &err).ok());
  EXPECT_EQ(err.code, StatusCode::kIncompatible);
  EXPECT_EQ(err.message, "v2");
  GetJob get_job;
  Ack ack;
  GetModule get_module;
  EXPECT_TRUE(DecodeMeta("", &get_job).ok());
  EXPECT_TRUE(DecodeMeta("", &ack).ok());
  EXPECT_TRUE(DecodeMeta("", &get_module).ok());
  JobSpecMsg job;
  ASSERT_TRUE(DecodeMeta(Meta(JobSpecMsg{R"({"lr":0.1})"}), &job).ok());
  EXPECT_EQ(job.json, R"({"lr":0.1})");
  Done done;
  ASSERT_TRUE(DecodeMeta(Meta(Done{""}), &done).ok());
  EXPECT_EQ(done.json, "");
  Pull pull;
  ASSERT_TRUE(DecodeMeta(Meta(Pull{~uint64_t{0}}), &pull).ok());
  EXPECT_EQ(pull.min_version, ~uint64_t{0});
  Heartbeat beat{"stale"};
  ASSERT_TRUE(DecodeMeta(Meta(Heartbeat{R"({"loss":0.5})"}), &beat).ok());
  EXPECT_EQ(beat.json, R"({"loss":0.5})");
  ASSERT_TRUE(DecodeMeta(Meta(Heartbeat{}), &beat).ok());
  EXPECT_EQ(beat.json, "");
}

TEST(MessagesTest, RoundTripsListMessages) {
  Register reg{{{"conv1.weight", DType::kFloat32, {32, 1, 3, 3}},
                {"scalar", DType::kFloat64, {}},
                {"empty", DType::kInt8, {0, 4}}}};
  Register reg_out;
  ASSERT_TRUE(DecodeMeta(Meta(reg), &reg_out).ok());
  EXPECT_EQ(reg_out.keys, reg.keys);
  PushPull pp{3,
              {Desc(0, DType::kFloat32, {2, 2}), Desc(5, DType::kUInt8, {0})}};
  PushPull pp_out;
  ASSERT_TRUE(DecodeMeta(Meta(pp), &pp_out).ok());
  EXPECT_EQ(pp_out.version, 3u);
  ExpectSameDescs(pp_out.grads, pp.grads);
  Params params{4, pp.grads, {1, 3}};
  Params params_out;
  ASSERT_TRUE(DecodeMeta(Meta(params), &params_out).ok());
  EXPECT_EQ(params_out.version, 4u);
  ExpectSameDescs(params_out.params, pp.grads);
  EXPECT_EQ(params_out.members, (std::vector<uint32_t>{1, 3}));
}

TEST(MessagesTest, DecodeReusesCapacity) {
  PushPull big{1, std::vector<TensorDesc>(16, Desc(1, DType::kInt32, {2}))};
  PushPull out;
  ASSERT_TRUE(DecodeMeta(Meta(big), &out).ok());
  const TensorDesc* storage = out.grads.data();
  PushPull small{2, {Desc(3, DType::kInt8, {1})}};
  ASSERT_TRUE(DecodeMeta(Meta(small), &out).ok());
  ASSERT_EQ(out.grads.size(), 1u);
  EXPECT_EQ(out.grads[0].key, 3u);
  EXPECT_EQ(out.grads.data(), storage);
  EXPECT_GE(out.grads.capacity(), 16u);

  Register reg{{{std::string(100, 'a'), DType::kFloat32, {1}},
                {"b", DType::kFloat32, {2}}}};
  Register reg_out;
  ASSERT_TRUE(DecodeMeta(Meta(reg), &reg_out).ok());
  const char* name_storage = reg_out.keys[0].name.data();
  ASSERT_TRUE(
      DecodeMeta(Meta(Register{{{"c", DType::kInt8, {}}}}), &reg_out).ok());
  ASSERT_EQ(reg_out.keys.size(), 1u);
  EXPECT_EQ(reg_out.keys[0], (KeySpec{"c", DType::kInt8, {}}));
  EXPECT_EQ(reg_out.keys[0].name.data(), name_storage);
}

TEST(MessagesTest, RejectsTruncationAndTrailingBytes) {
  const std::string hello = Meta(Hello{Role::kWorker, 1, 2});
  ExpectCorrupt<Hello>("", "hello: truncated at role: 0 bytes left, need 1");
  ExpectCorrupt<Hello>(hello.substr(0, 3),
                       "hello: truncated at rank: 2 bytes left, need 4");
  ExpectCorrupt<Hello>(hello.substr(0, 8),
                       "hello: truncated at world_size: 3 bytes left, need 4");
  ExpectCorrupt<Hello>(hello.substr(0, 9),
                       "hello: truncated at claim: 0 bytes left, need 1");
  ExpectCorrupt<Hello>(hello.substr(0, 20),
                       "hello: truncated at version: 6 bytes left, need 8");
  ExpectCorrupt<Hello>(hello + "xy", "hello: 2 trailing bytes");
  ExpectCorrupt<Ack>("x", "ack: 1 trailing byte");
  ExpectCorrupt<GetJob>("xyz", "get_job: 3 trailing bytes");
  ExpectCorrupt<GetModule>("x", "get_module: 1 trailing byte");
  ExpectCorrupt<Pull>(U64(1) + "!", "pull: 1 trailing byte");
  ExpectCorrupt<Pull>("1234",
                      "pull: truncated at min_version: 4 bytes left, "
                      "need 8");
  ExpectCorrupt<Done>(Meta(Done{"{}"}) + "??", "done: 2 trailing bytes");
  // A heartbeat's meta is always a str: the empty meta of version 7 is short.
  ExpectCorrupt<Heartbeat>(
      "", "heartbeat: truncated at json: 0 bytes left, need 4");
  ExpectCorrupt<Heartbeat>(Bytes({9, 0, 0, 0}) + "{}",
                           "heartbeat: json length 9 exceeds the 2 bytes left");
  ExpectCorrupt<Heartbeat>(Meta(Heartbeat{"{}"}) + "!",
                           "heartbeat: 1 trailing byte");
  ExpectCorrupt<PushPull>(Meta(PushPull{1, {Desc(0, DType::kInt8, {1})}}) + "z",
                          "push_pull: 1 trailing byte");
}

TEST(MessagesTest, RejectsBadEnums) {
  const std::string tail = Bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  ExpectCorrupt<Hello>(Bytes({0, 1, 0, 0, 0, 2, 0, 0, 0}) + tail,
                       "hello: role 0 is unknown, expected 1..3");
  ExpectCorrupt<Hello>(Bytes({4, 1, 0, 0, 0, 2, 0, 0, 0}) + tail,
                       "hello: role 4 is unknown, expected 1..3");
  ExpectCorrupt<Hello>(Bytes({1, 1, 0, 0, 0, 2, 0, 0, 0, 3}) + tail.substr(1),
                       "hello: claim 3 is unknown, expected 0..2");
  ExpectCorrupt<Hello>(Bytes({2, 1, 0, 0, 0, 2, 0, 0, 0, 2}) + tail.substr(1),
                       "hello: claim 2 from a worker, expected 0 (only a "
                       "server's standby claims)");
  ExpectCorrupt<ErrorMsg>(Bytes({0, 0, 0, 0, 0, 0}),
                          "error: code 0 is unknown, expected 1..7");
  ExpectCorrupt<ErrorMsg>(Bytes({8, 0, 0, 0, 0, 0}),
                          "error: code 8 is unknown, expected 1..7");
}

TEST(MessagesTest, RejectsStringLongerThanInput) {
  ExpectCorrupt<JobSpecMsg>(U32(100) + "abc",
                            "job_spec: json length 100 exceeds the 3 bytes "
                            "left");
  ExpectCorrupt<Done>(U32(0xFFFFFFFF),
                      "done: json length 4294967295 exceeds max 16777216");
  ExpectCorrupt<JobSpecMsg>(U32(kMaxStringBytes + 1),
                            "job_spec: json length 16777217 exceeds max "
                            "16777216");
  ExpectCorrupt<ErrorMsg>(Bytes({3, 0}) + U32(5) + "oops",
                          "error: message length 5 exceeds the 4 bytes left");
  ExpectCorrupt<Register>(U32(1) + U32(1000) + "wx",
                          "register: key 0: name length 1000 exceeds the 2 "
                          "bytes left");
  ExpectCorrupt<JobSpecMsg>("ab",
                            "job_spec: truncated at json: 2 bytes left, "
                            "need 4");
}

TEST(MessagesTest, RejectsBadCounts) {
  ExpectCorrupt<PushPull>(U64(1) + U32(kMaxTensorsPerMessage + 1),
                          "push_pull: count 1048577 exceeds max 1048576");
  ExpectCorrupt<Register>(U32(0xFFFFFFFF),
                          "register: count 4294967295 exceeds max 1048576");
  // A count the bytes left cannot hold is refused before anything grows.
  ExpectCorrupt<Params>(U64(1) + U32(1000) + std::string(20, '\0'),
                        "params: count 1000 needs at least 15000 bytes, 20 "
                        "left");
  ExpectCorrupt<Register>(U32(3) + std::string(17, '\0'),
                          "register: count 3 needs at least 18 bytes, 17 left");
}

TEST(MessagesTest, RejectsBadDescriptorNamingTheTensor) {
  std::vector<TensorDesc> descs(4, Desc(1, DType::kFloat32, {4}));
  descs[3].nbytes = 12;
  ExpectCorrupt<PushPull>(Meta(PushPull{1, descs}),
                          "push_pull: tensor 3: nbytes 12 != numel 4 x 4 bytes "
                          "(float32)");
  descs[3] = Desc(1, DType::kFloat32, {4});
  descs[1].dims[0] = -1;
  ExpectCorrupt<Params>(Meta(Params{1, descs, {}}),
                        "params: tensor 1: dims[0] is -1, expected >= 0");
  const std::string one = Meta(Params{1, {Desc(1, DType::kInt8, {2, 2})}, {}});
  // Less the flags, the members count, the sparse rows count and one byte
  // of the descriptor.
  ExpectCorrupt<Params>(one.substr(0, one.size() - 10),
                        "params: tensor 0: truncated descriptor: 30 bytes "
                        "left, need 31");
}

TEST(MessagesTest, RejectsBadKeySpec) {
  const std::string head = U32(2) + U32(1) + "a" + Bytes({1, 0});
  ExpectCorrupt<Register>(head + U32(1) + "b" + Bytes({0, 0}),
                          "register: key 1: dtype 0 is unknown, expected 1..8");
  ExpectCorrupt<Register>(head + U32(1) + "b" + Bytes({1, 9}),
                          "register: key 1: ndim 9 exceeds 8");
  ExpectCorrupt<Register>(head + U32(1) + "b" + Bytes({1, 1}) + U64(~0ull),
                          "register: key 1: dims[0] is -1, expected >= 0");
  ExpectCorrupt<Register>(
      head + U32(1) + "b" + Bytes({1, 2}) + U64(uint64_t{1} << 62) + U64(4),
      "register: key 1: dims product overflows int64 at "
      "dims[1]");
  ExpectCorrupt<Register>(head + U32(1) + "b" + Bytes({1, 1, 7}),
                          "register: key 1: truncated at dims: 1 bytes left, "
                          "need 8");
}

TEST(MessagesTest, DataBytesSumsAndRefusesOverflow) {
  uint64_t total = 7;
  ASSERT_TRUE(DataBytes({}, &total).ok());
  EXPECT_EQ(total, 0u);
  std::vector<TensorDesc> descs = {Desc(0, DType::kFloat64, {3}),
                                   Desc(1, DType::kInt8, {5})};
  ASSERT_TRUE(DataBytes(descs, &total).ok());
  EXPECT_EQ(total, 29u);
  descs[0].nbytes = ~uint64_t{0} - 2;
  Status s = DataBytes(descs, &total);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "data bytes: sum overflows u64 at tensor 1");
}

FrameHeader Header(MsgType type, uint64_t body_len) {
  FrameHeader h;
  h.type = type;
  h.body_len = body_len;
  return h;
}

TEST(MessagesTest, CheckBodyLength) {
  EXPECT_TRUE(CheckBodyLength(Header(MsgType::kAck, 4), 0, 0).ok());
  EXPECT_TRUE(CheckBodyLength(Header(MsgType::kParams, 110), 6, 100).ok());
  Status s = CheckBodyLength(Header(MsgType::kParams, 110), 6, 99);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "frame: body_len 110 != 4 + meta_len 6 + data 99");
  EXPECT_EQ(CheckBodyLength(Header(MsgType::kParams, 10), 7, 0).message(),
            "frame: meta_len 7 does not fit in body_len 10 - 4");
  EXPECT_EQ(CheckBodyLength(Header(MsgType::kParams, 1ull << 40),
                            kMaxMetaBytes + 1ull, 0)
                .message(),
            "frame: meta_len 67108865 exceeds max 67108864");
}

TEST(MessagesTest, ValidateFrameAcceptsEveryType) {
  auto ok = [](MsgType type, const std::string& meta, uint64_t data) {
    Status s = ValidateFrame(Header(type, 4 + meta.size() + data), meta, data);
    EXPECT_TRUE(s.ok()) << MsgTypeName(type) << ": " << s.ToString();
  };
  ok(MsgType::kHello, Meta(Hello{}), 0);
  ok(MsgType::kError, Meta(ErrorMsg{StatusCode::kNotFound, "x"}), 0);
  ok(MsgType::kGetJob, "", 0);
  ok(MsgType::kJobSpec, Meta(JobSpecMsg{"{}"}), 0);
  ok(MsgType::kRegister, Meta(Register{{{"w", DType::kFloat32, {1}}}}), 0);
  ok(MsgType::kAck, "", 0);
  ok(MsgType::kPull, Meta(Pull{3}), 0);
  const std::vector<TensorDesc> descs = {Desc(0, DType::kFloat32, {2, 3}),
                                         Desc(1, DType::kInt64, {0})};
  ok(MsgType::kPushPull, Meta(PushPull{1, descs}), 24);
  ok(MsgType::kParams, Meta(Params{1, descs, {}}), 24);
  ok(MsgType::kDone, Meta(Done{"{}"}), 0);
  ok(MsgType::kPush, Meta(Push{1, descs}), 24);
  ok(MsgType::kAuthHello, Meta(AuthHello{std::string(32, 'n')}), 0);
  ok(MsgType::kChallenge,
     Meta(Challenge{std::string(32, 'n'), std::string(32, 'p')}), 0);
  ok(MsgType::kAuth, Meta(Auth{std::string(32, 'p')}), 0);
  ok(MsgType::kServerInfo, Meta(ServerInfo{"h:1"}), 0);
  ok(MsgType::kShard, Meta(Shard{1, descs}), 24);
  ok(MsgType::kStepRecord, Meta(StepRecord{2, descs}), 24);
  ok(MsgType::kHeartbeat, Meta(Heartbeat{"{}"}), 0);
  ok(MsgType::kSnapshot, Meta(Snapshot{5, true}), 0);
  ok(MsgType::kGetModule, "", 0);
  ok(MsgType::kModule,
     Meta(ModuleMsg{std::string(64, 'f'), Desc(0, DType::kUInt8, {5})}), 5);
  ok(MsgType::kPushBatch,
     Meta(PushBatch{7, Desc(0, DType::kFloat32, {2, 3}),
                    Desc(1, DType::kInt64, {2})}),
     40);
  ok(MsgType::kBatchDone, Meta(BatchDone{8, 0.5, true}), 0);
}

TEST(MessagesTest, RefusesUnknownFlagBits) {
  std::string params = Meta(Params{1, {}, {}});
  params.back() = 2;
  ExpectCorrupt<Params>(params,
                        "params: flags 2 has unknown bits, expected 0 or 1");
  ExpectCorrupt<Snapshot>(U64(3) + Bytes({8}),
                          "snapshot: flags 8 has unknown bits, expected 0..7");
  ExpectCorrupt<Snapshot>(U64(3) + Bytes({4}),
                          "snapshot: flag replay without standby");
  Params decoded;
  ASSERT_TRUE(DecodeMeta(Meta(Params{1, {}, {}, true}), &decoded).ok());
  EXPECT_TRUE(decoded.stop);
  Snapshot snapshot;
  ASSERT_TRUE(DecodeMeta(Meta(Snapshot{9, false}), &snapshot).ok());
  EXPECT_EQ(snapshot.min_version, 9u);
  EXPECT_FALSE(snapshot.standby);
  EXPECT_EQ(Meta(Snapshot{9, true, true}), U64(9) + Bytes({3}));
  ASSERT_TRUE(DecodeMeta(U64(9) + Bytes({2}), &snapshot).ok());
  EXPECT_TRUE(snapshot.standby);
  EXPECT_FALSE(snapshot.with_optimizer_state);
  EXPECT_FALSE(snapshot.replay);
  EXPECT_EQ(Meta(Snapshot{9, true, true, true}), U64(9) + Bytes({7}));
  ASSERT_TRUE(DecodeMeta(U64(9) + Bytes({6}), &snapshot).ok());
  EXPECT_TRUE(snapshot.replay);
}

TEST(MessagesTest, StepRecordIsAShardOfAnotherType) {
  EXPECT_EQ(TypeOf(StepRecord{}), MsgType::kStepRecord);
  EXPECT_EQ(static_cast<uint16_t>(MsgType::kStepRecord), 25);
  const std::vector<TensorDesc> descs = {Desc(0, DType::kFloat32, {2, 3}),
                                         Desc(1, DType::kUInt8, {8})};
  EXPECT_EQ(Meta(StepRecord{7, descs}), Meta(Shard{7, descs}));
  StepRecord decoded;
  ASSERT_TRUE(DecodeMeta(Meta(StepRecord{7, descs}), &decoded).ok());
  EXPECT_EQ(decoded.version, 7u);
  ASSERT_EQ(decoded.params.size(), 2u);
  EXPECT_EQ(decoded.params[1].nbytes, 8u);
}

TEST(MessagesTest, ValidateFrameChecksDataAndType) {
  auto check = [](MsgType type, const std::string& meta, uint64_t data) {
    return ValidateFrame(Header(type, 4 + meta.size() + data), meta, data);
  };
  EXPECT_EQ(check(MsgType::kHello, Meta(Hello{}), 5).message(),
            "hello: data section is 5 bytes, expected 0");
  const std::string meta = Meta(PushPull{
      1, {Desc(0, DType::kFloat32, {24}), Desc(1, DType::kInt8, {0})}});
  EXPECT_EQ(check(MsgType::kPushPull, meta, 100).message(),
            "push_pull: data section is 100 bytes, descriptors say 96");
  EXPECT_EQ(check(MsgType::kPushPull, meta, 50).message(),
            "push_pull: tensor 0: nbytes 96 exceeds the 50 data bytes left");
  // Meta decoded as the header's type says: a Pull's meta is no Hello.
  EXPECT_EQ(check(MsgType::kHello, Meta(Pull{5}), 0).message(),
            "hello: role 5 is unknown, expected 1..3");
  EXPECT_EQ(check(static_cast<MsgType>(26), "", 0).message(),
            "frame header: type 26 is unknown, expected 1..25");
  Status s = ValidateFrame(Header(MsgType::kAck, 9), "", 0);
  EXPECT_EQ(s.message(), "frame: body_len 9 != 4 + meta_len 0 + data 0");
}

// Decodes `meta` from a heap copy of exactly its size, so that a read one
// byte past the end is caught by AddressSanitizer (a std::string's SSO
// buffer or spare capacity would hide it). Returns the decode Status.
template <typename M>
Status DecodeExact(const std::string& meta) {
  std::unique_ptr<char[]> copy(new char[meta.size()]);
  std::copy(meta.begin(), meta.end(), copy.get());
  M out;
  return DecodeMeta(std::string_view(copy.get(), meta.size()), &out);
}

template <typename M>
void ExpectEveryPrefixFails(const M& m) {
  const std::string meta = Meta(m);
  EXPECT_TRUE(DecodeExact<M>(meta).ok());
  for (size_t n = 0; n < meta.size(); ++n) {
    Status s = DecodeExact<M>(meta.substr(0, n));
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << NameOf(m) << " " << n;
    EXPECT_EQ(s.message().rfind(MsgTypeName(TypeOf(m)), 0), 0u) << s.message();
  }
}

TEST(MessagesTest, EveryTruncationFails) {
  const std::vector<TensorDesc> descs = {Desc(0, DType::kInt32, {2, 5}),
                                         Desc(9, DType::kFloat16, {})};
  ExpectEveryPrefixFails(Hello{Role::kWorker, 1, 2});
  ExpectEveryPrefixFails(ErrorMsg{StatusCode::kNotFound, "no key 7"});
  ExpectEveryPrefixFails(JobSpecMsg{"{}"});
  ExpectEveryPrefixFails(Register{
      {{"w", DType::kFloat32, {2, 3}}, {"bias", DType::kFloat32, {3}}}});
  ExpectEveryPrefixFails(Pull{1});
  ExpectEveryPrefixFails(PushPull{1, descs});
  ExpectEveryPrefixFails(Params{1, descs, {5}, true});
  ExpectEveryPrefixFails(Snapshot{1, true});
  ExpectEveryPrefixFails(Done{"{}"});
  ExpectEveryPrefixFails(AuthHello{std::string(32, 'n')});
  ExpectEveryPrefixFails(Challenge{std::string(32, 'n'), std::string(32, 'p')});
  ExpectEveryPrefixFails(Auth{std::string(32, 'p')});
  ExpectEveryPrefixFails(PushBatch{3, Desc(0, DType::kFloat32, {4, 2}),
                                   Desc(1, DType::kFloat32, {4})});
  ExpectEveryPrefixFails(BatchDone{4, 1.25, true});
  ExpectEveryPrefixFails(StepRecord{7, {Desc(0, DType::kFloat32, {2})}});
}

TEST(MessagesTest, GoldenBytesOfShmOfferAndShmTicket) {
  EXPECT_EQ(TypeOf(ShmOffer{}), MsgType::kShmOffer);
  EXPECT_EQ(TypeOf(ShmTicket{}), MsgType::kShmTicket);
  EXPECT_EQ(static_cast<uint16_t>(MsgType::kShmOffer), 23);
  EXPECT_EQ(static_cast<uint16_t>(MsgType::kShmTicket), 24);

  EXPECT_EQ(Meta(ShmOffer{"b/net:7/uid:9"}),
            Bytes({13, 0, 0, 0}) + "b/net:7/uid:9");  // host
  ShmOffer offer;
  ASSERT_TRUE(DecodeMeta(Meta(ShmOffer{"b/net:7/uid:9"}), &offer).ok());
  EXPECT_EQ(offer.host, "b/net:7/uid:9");

  // A ticket: the socket's name and the cookie, no refusal.
  const std::string cookie = "0123456789abcdef0123456789abcdef";
  ASSERT_EQ(cookie.size(), kShmCookieChars);
  const ShmTicket granted{"pstrain-shm-7", cookie, ""};
  EXPECT_EQ(Meta(granted), Bytes({13, 0, 0, 0}) + "pstrain-shm-7" +  // name
                               Bytes({32, 0, 0, 0}) + cookie +       // cookie
                               Bytes({0, 0, 0, 0}));                 // refusal
  ShmTicket ticket;
  ASSERT_TRUE(DecodeMeta(Meta(granted), &ticket).ok());
  EXPECT_EQ(ticket.socket_name, "pstrain-shm-7");
  EXPECT_EQ(ticket.cookie, cookie);
  EXPECT_EQ(ticket.refusal, "");

  // A refusal: empty name and cookie, and why.
  const ShmTicket refused{"", "", "the server's --transport is tcp"};
  EXPECT_EQ(Meta(refused), Bytes({0, 0, 0, 0,      // socket_name
                                  0, 0, 0, 0,      // cookie
                                  31, 0, 0, 0}) +  // refusal
                               "the server's --transport is tcp");
  ASSERT_TRUE(DecodeMeta(Meta(refused), &ticket).ok());
  EXPECT_EQ(ticket.socket_name, "");
  EXPECT_EQ(ticket.cookie, "");
  EXPECT_EQ(ticket.refusal, "the server's --transport is tcp");

  ExpectEveryPrefixFails(ShmOffer{"b/net:7/uid:9"});
  ExpectEveryPrefixFails(granted);
  ExpectEveryPrefixFails(refused);
  ExpectCorrupt<ShmTicket>(Meta(granted) + "x", "shm_ticket: 1 trailing byte");
}

TEST(MessagesTest, ShmTicketWithoutARefusalNeedsA32HexDigitCookie) {
  const std::string why =
      "shm_ticket: a ticket needs a socket name and a cookie of 32 hex digits";
  const std::string good = "0123456789abcdef0123456789abcdef";
  auto ticket = [](const std::string& name, const std::string& cookie) {
    return U32(static_cast<uint32_t>(name.size())) + name +
           U32(static_cast<uint32_t>(cookie.size())) + cookie + U32(0);
  };
  ShmTicket out;
  ASSERT_TRUE(DecodeMeta(ticket("s", good), &out).ok());
  ExpectCorrupt<ShmTicket>(ticket("s", ""), why);
  ExpectCorrupt<ShmTicket>(ticket("s", good.substr(1)), why);  // 31 digits
  ExpectCorrupt<ShmTicket>(ticket("s", good + "0"), why);      // 33 digits
  std::string upper = good;
  upper[10] = 'A';
  ExpectCorrupt<ShmTicket>(ticket("s", upper), why);
  std::string not_hex = good;
  not_hex[31] = 'g';
  ExpectCorrupt<ShmTicket>(ticket("s", not_hex), why);
  ExpectCorrupt<ShmTicket>(ticket("", good), why);  // no socket name
  // A frame of type shm_ticket is refused by the frame's checks as well.
  const std::string bad = ticket("s", upper);
  Status s = ValidateFrame(Header(MsgType::kShmTicket, 4 + bad.size()), bad, 0);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), why);
}

template <typename M>
int CountRandomDecodes(std::mt19937_64* rng) {
  int ok = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string meta((*rng)() % 64, '\0');
    for (char& c : meta)
      c = static_cast<char>((*rng)() % 4 == 0 ? (*rng)() : 1);
    Status s = DecodeExact<M>(meta);
    EXPECT_TRUE(s.ok() || s.code() == StatusCode::kCorruption);
    ok += s.ok();
  }
  return ok;
}

TEST(MessagesTest, RandomMetaDecodesOrFails) {
  // Bytes biased towards 1 (a valid dtype, role, count or small length) so
  // that decoding gets past the first field more often.
  std::mt19937_64 rng(7);
  EXPECT_GT(CountRandomDecodes<Hello>(&rng), 0);
  CountRandomDecodes<ErrorMsg>(&rng);
  CountRandomDecodes<JobSpecMsg>(&rng);
  CountRandomDecodes<Register>(&rng);
  CountRandomDecodes<Pull>(&rng);
  CountRandomDecodes<PushPull>(&rng);
  CountRandomDecodes<Params>(&rng);
  CountRandomDecodes<Done>(&rng);
  CountRandomDecodes<AuthHello>(&rng);
  CountRandomDecodes<Challenge>(&rng);
  CountRandomDecodes<Auth>(&rng);
  CountRandomDecodes<Snapshot>(&rng);
  CountRandomDecodes<PushBatch>(&rng);
  EXPECT_GT(CountRandomDecodes<BatchDone>(&rng), 0);
}

TEST(MessagesTest, TypeOfAndRoleName) {
  EXPECT_EQ(TypeOf(Hello{}), MsgType::kHello);
  EXPECT_EQ(TypeOf(ErrorMsg{}), MsgType::kError);
  EXPECT_EQ(TypeOf(GetJob{}), MsgType::kGetJob);
  EXPECT_EQ(TypeOf(JobSpecMsg{}), MsgType::kJobSpec);
  EXPECT_EQ(TypeOf(Register{}), MsgType::kRegister);
  EXPECT_EQ(TypeOf(Ack{}), MsgType::kAck);
  EXPECT_EQ(TypeOf(Pull{}), MsgType::kPull);
  EXPECT_EQ(TypeOf(PushPull{}), MsgType::kPushPull);
  EXPECT_EQ(TypeOf(Params{}), MsgType::kParams);
  EXPECT_EQ(TypeOf(Done{}), MsgType::kDone);
  EXPECT_EQ(TypeOf(Push{}), MsgType::kPush);
  EXPECT_EQ(TypeOf(AuthHello{}), MsgType::kAuthHello);
  EXPECT_EQ(TypeOf(Challenge{}), MsgType::kChallenge);
  EXPECT_EQ(TypeOf(Auth{}), MsgType::kAuth);
  EXPECT_EQ(TypeOf(ServerInfo{}), MsgType::kServerInfo);
  EXPECT_EQ(TypeOf(Shard{}), MsgType::kShard);
  EXPECT_EQ(TypeOf(StepRecord{}), MsgType::kStepRecord);
  EXPECT_EQ(TypeOf(Heartbeat{}), MsgType::kHeartbeat);
  EXPECT_EQ(TypeOf(Snapshot{}), MsgType::kSnapshot);
  EXPECT_EQ(TypeOf(GetModule{}), MsgType::kGetModule);
  EXPECT_EQ(TypeOf(ModuleMsg{}), MsgType::kModule);
  EXPECT_EQ(TypeOf(PushBatch{}), MsgType::kPushBatch);
  EXPECT_EQ(TypeOf(BatchDone{}), MsgType::kBatchDone);
  EXPECT_STREQ(RoleName(Role::kServer), "server");
  EXPECT_STREQ(RoleName(Role::kWorker), "worker");
  EXPECT_STREQ(RoleName(Role::kTool), "tool");
  EXPECT_STREQ(RoleName(static_cast<Role>(0)), "unknown");
}

}  // namespace
}  // namespace pstrain::wire
