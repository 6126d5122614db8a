#include "wire/frame_reader.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/alloc_counter.h"
#include "testing/bytes.h"
#include "wire/messages.h"

namespace pstrain::wire {
namespace {

using State = FrameReader::State;

using pstrain::testing::AllocCounter;

constexpr DType kAllDTypes[] = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
    DType::kInt64,   DType::kInt32,   DType::kInt8,    DType::kUInt8};

std::string RandomBytes(std::mt19937_64* rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s)
    c = static_cast<char>((*rng)() & 0xFF);
  return s;
}

template <typename M>
std::string Frame(const M& m, uint64_t request_id, const std::string& data) {
  std::string meta;
  std::string out;
  EncodeMeta(m, &meta);
  EncodeFramePrefix(TypeOf(m), request_id, meta, data.size(), &out);
  return out + data;
}

using pstrain::testing::Desc;

// PushPull v5 with float32 [2,3] and int64 [2]: 40 data bytes. Its layout is
// spelled out in FlipEachByteGivesTheExactError.
std::string SampleFrame() {
  std::mt19937_64 rng(5);
  PushPull m{5,
             {Desc(1, DType::kFloat32, {2, 3}), Desc(2, DType::kInt64, {2})}};
  return Frame(m, 42, RandomBytes(&rng, 40));
}

// One frame of every type (tensor ones with data), request ids 1..22.
std::vector<std::string> FrameOfEveryType() {
  const std::vector<TensorDesc> descs = {Desc(0, DType::kUInt8, {3}),
                                         Desc(1, DType::kFloat16, {0, 2})};
  return {
      Frame(Hello{Role::kServer, 0, 3}, 1, ""),
      Frame(ErrorMsg{StatusCode::kTimeout, "slow"}, 2, ""),
      Frame(GetJob{}, 3, ""),
      Frame(JobSpecMsg{R"({"lr":0.1})"}, 4, ""),
      Frame(Register{{{"w", DType::kFloat32, {4, 4}}}}, 5, ""),
      Frame(Ack{}, 6, ""),
      Frame(Pull{7}, 7, ""),
      Frame(PushPull{1, descs}, 8, "abc"),
      Frame(Params{2, descs, {}}, 9, "xyz"),
      Frame(Done{"{}"}, 10, ""),
      Frame(Push{3, descs}, 11, "abc"),
      Frame(AuthHello{std::string(32, 'n')}, 12, ""),
      Frame(Challenge{std::string(32, 'n'), std::string(32, 'p')}, 13, ""),
      Frame(Auth{std::string(32, 'p')}, 14, ""),
      Frame(ServerInfo{"h:1"}, 15, ""),
      Frame(Shard{4, descs}, 16, "xyz"),
      Frame(Heartbeat{}, 17, ""),
      Frame(Snapshot{8, true}, 18, ""),
      Frame(GetModule{}, 19, ""),
      Frame(ModuleMsg{std::string(64, 'c'), Desc(0, DType::kUInt8, {4})}, 20,
            "PK\x03\x04"),
      Frame(PushBatch{5, Desc(0, DType::kFloat32, {1, 1}),
                      Desc(1, DType::kInt64, {1})},
            21, "x...y......."),
      Frame(BatchDone{6, 2.5, false}, 22, ""),
      Frame(ShmOffer{"boot/net:1/uid:0"}, 23, ""),
      Frame(ShmTicket{"pstrain-shm-1-ab", std::string(32, 'e'), ""}, 24, ""),
      Frame(StepRecord{5, descs}, 25, "xyz")};
}

// Feeds `bytes` in pieces of `chunk` until the reader leaves kNeedMore or
// the bytes run out; *consumed says how many it took.
State FeedInChunks(FrameReader* reader, std::string_view bytes, size_t chunk,
                   size_t* consumed) {
  State state = State::kNeedMore;
  *consumed = 0;
  while (state == State::kNeedMore && *consumed < bytes.size()) {
    std::string_view piece = bytes.substr(*consumed, chunk);
    const size_t n = piece.size();
    state = reader->Feed(&piece);
    *consumed += n - piece.size();
  }
  return state;
}

using pstrain::testing::ExpectSameDescs;

// Feeds `bytes` whole to a fresh reader and expects kError with `code` and
// a message containing `what`.
void ExpectError(const std::string& bytes, StatusCode code,
                 const std::string& what,
                 uint64_t max = kDefaultMaxFrameBytes) {
  FrameReader reader(max);
  std::string_view in = bytes;
  ASSERT_EQ(reader.Feed(&in), State::kError) << what;
  EXPECT_EQ(reader.status().code(), code);
  EXPECT_NE(reader.status().message().find(what), std::string::npos)
      << reader.status().message();
}

TEST(FrameReaderTest, RoundTripsEveryDTypeAndRankWithData) {
  std::mt19937_64 rng(1);
  for (DType dtype : kAllDTypes) {
    std::vector<TensorDesc> descs;
    for (int rank = 0; rank <= kMaxTensorRank; ++rank) {
      std::vector<int64_t> dims;
      for (int i = 0; i < rank; ++i)
        dims.push_back(1 + (i + rank) % 3);
      descs.push_back(Desc(descs.size(), dtype, dims));
      if (rank == 0)
        continue;
      dims[rank - 1] = 0;  // the same rank, empty
      descs.push_back(Desc(descs.size(), dtype, dims));
    }
    std::string data;
    for (const TensorDesc& d : descs)
      data += RandomBytes(&rng, d.nbytes);
    const std::string frame = Frame(Params{42, descs, {}}, 77, data);
    for (size_t chunk : {size_t{1}, size_t{7}, frame.size()}) {
      FrameReader reader;
      size_t consumed = 0;
      ASSERT_EQ(FeedInChunks(&reader, frame, chunk, &consumed), State::kFrame);
      EXPECT_EQ(consumed, frame.size());  // never kFrame before the last byte
      EXPECT_EQ(reader.header().type, MsgType::kParams);
      EXPECT_EQ(reader.header().request_id, 77u);
      Params out;
      ASSERT_TRUE(DecodeMeta(reader.meta(), &out).ok());
      EXPECT_EQ(out.version, 42u);
      ExpectSameDescs(out.params, descs);
      EXPECT_EQ(reader.data(), data) << DTypeName(dtype);
    }
  }
}

TEST(FrameReaderTest, SplitAtEveryByte) {
  const std::string frame = SampleFrame();
  for (size_t k = 0; k <= frame.size(); ++k) {
    FrameReader reader;
    std::string_view first(frame.data(), k);
    std::string_view second(frame.data() + k, frame.size() - k);
    if (k < frame.size()) {
      ASSERT_EQ(reader.Feed(&first), State::kNeedMore) << k;
      EXPECT_TRUE(first.empty());
    }
    std::string_view rest = k < frame.size() ? second : first;
    ASSERT_EQ(reader.Feed(&rest), State::kFrame) << k;
    EXPECT_TRUE(rest.empty());
    EXPECT_EQ(reader.header().request_id, 42u);
    EXPECT_EQ(reader.meta(), frame.substr(32, frame.size() - 32 - 40));
    EXPECT_EQ(reader.data(), frame.substr(frame.size() - 40));
  }
}

TEST(FrameReaderTest, TruncatedFramesNeedMoreAtEveryPrefix) {
  for (const std::string& frame : FrameOfEveryType()) {
    for (size_t n = 0; n < frame.size(); ++n) {
      FrameReader reader;
      std::string_view in(frame.data(), n);
      ASSERT_EQ(reader.Feed(&in), State::kNeedMore) << n;
      EXPECT_TRUE(in.empty());
      EXPECT_TRUE(reader.status().ok());
    }
    FrameReader reader;
    size_t consumed = 0;
    EXPECT_EQ(FeedInChunks(&reader, frame, 1, &consumed), State::kFrame);
    EXPECT_EQ(consumed, frame.size());
  }
}

TEST(FrameReaderTest, ReadsBackToBackFramesAndStopsAtEachEnd) {
  std::string stream;
  for (const std::string& f : FrameOfEveryType())
    stream += f;
  FrameReader reader;
  std::string_view in = stream;
  for (uint16_t t = 1; t <= kMaxMsgType; ++t) {
    ASSERT_EQ(reader.Feed(&in), State::kFrame) << t;
    EXPECT_EQ(reader.header().type, static_cast<MsgType>(t));
    EXPECT_EQ(reader.header().request_id, t);
    EXPECT_TRUE(
        ValidateFrame(reader.header(), reader.meta(), reader.data().size())
            .ok());
  }
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(reader.Feed(&in), State::kNeedMore);
  EXPECT_TRUE(reader.meta().empty());  // the last frame is released
}

TEST(FrameReaderTest, EmptyFrameCompletesWithoutMoreInput) {
  const std::string frame = Frame(Ack{}, 9, "");
  ASSERT_EQ(frame.size(), 32u);
  FrameReader reader;
  std::string_view in = frame;
  ASSERT_EQ(reader.Feed(&in), State::kFrame);
  EXPECT_EQ(reader.header().type, MsgType::kAck);
  EXPECT_TRUE(reader.meta().empty());
  EXPECT_TRUE(reader.data().empty());
}

// The hello of a version-9 build (the example in wire-format.md as that
// version wrote it, with no claim): refused at its header, in one line naming
// both versions, before anything of its body is read.
TEST(FrameReaderTest, AVersion9HelloIsRefusedNamingBothVersions) {
  const std::string hello9 = {
      0x50, 0x53, 0x54, 0x52, 0x09, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x0a,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x01,
      0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00};
  FrameReader reader(kDefaultMaxFrameBytes);
  std::string_view in = hello9;
  ASSERT_EQ(reader.Feed(&in), State::kError);
  EXPECT_EQ(reader.status().ToString(),
            "incompatible: protocol version 9, this build speaks 12");
  EXPECT_EQ(in.size(), hello9.size() - kFrameHeaderBytes);
}

TEST(FrameReaderTest, RejectsBadHeaderFields) {
  std::string f = SampleFrame();
  f[0] = 0;
  ExpectError(f, StatusCode::kCorruption,
              "frame header: magic is 0x52545300, expected 0x52545350");
  f = SampleFrame();
  f[4] = 13;
  ExpectError(f, StatusCode::kIncompatible,
              "protocol version 13, this build speaks 12");
  f = SampleFrame();
  f[6] = 26;
  ExpectError(f, StatusCode::kCorruption,
              "frame header: type 26 is unknown, expected 1..25");
  f = SampleFrame();
  f[11] = static_cast<char>(0x80);
  ExpectError(f, StatusCode::kCorruption,
              "frame header: flags 0x80000000 has unknown bits");
}

TEST(FrameReaderTest, RefusesOversizeBodyBeforeAllocating) {
  FrameHeader h;
  h.type = MsgType::kParams;
  h.body_len = uint64_t{1} << 60;
  std::string header(kFrameHeaderBytes, '\0');
  EncodeFrameHeader(h, header.data());
  FrameReader reader(1 << 20);
  std::string_view in = header;
  AllocCounter allocs;
  const State state = reader.Feed(&in);
  allocs.Stop();
  ASSERT_EQ(state, State::kError);
  EXPECT_EQ(reader.status().message(),
            "frame header: body_len 1152921504606846976 exceeds "
            "max_frame_bytes 1048576");
  EXPECT_LT(allocs.largest(), 1024u);  // the header and the message only
}

TEST(FrameReaderTest, RefusesMetaLenBeforeAllocating) {
  FrameHeader h;
  h.type = MsgType::kParams;
  h.body_len = uint64_t{1} << 30;
  std::string prefix(kFrameHeaderBytes + kMetaLenBytes, '\0');
  EncodeFrameHeader(h, prefix.data());
  EncodeFixed32(prefix.data() + kFrameHeaderBytes, kMaxMetaBytes + 1);
  AllocCounter allocs;
  FrameReader reader;
  std::string_view in = prefix;
  const State state = reader.Feed(&in);
  allocs.Stop();
  ASSERT_EQ(state, State::kError);
  EXPECT_EQ(reader.status().message(),
            "frame: meta_len 67108865 exceeds max 67108864");
  EXPECT_LT(allocs.largest(), 1024u);

  h.body_len = 20;
  EncodeFrameHeader(h, prefix.data());
  EncodeFixed32(prefix.data() + kFrameHeaderBytes, 100);
  ExpectError(prefix, StatusCode::kCorruption,
              "frame: meta_len 100 does not fit in body_len 20 - 4");
}

TEST(FrameReaderTest, ChecksMetaBeforeReservingData) {
  // Meta says 16 data bytes; body_len claims 1 GiB more. The reader must
  // refuse once the meta is in, without reserving the gigabyte.
  std::string meta;
  EncodeMeta(PushPull{1, {Desc(0, DType::kFloat32, {4})}}, &meta);
  std::string frame;
  EncodeFramePrefix(MsgType::kPushPull, 3, meta, uint64_t{1} << 30, &frame);
  AllocCounter allocs;
  FrameReader reader;
  std::string_view in = frame;
  const State state = reader.Feed(&in);
  allocs.Stop();
  ASSERT_EQ(state, State::kError);
  EXPECT_EQ(reader.status().message(),
            "push_pull: data section is 1073741824 bytes, descriptors say "
            "16");
  EXPECT_LT(allocs.largest(), 4096u);
}

TEST(FrameReaderTest, RejectsBadMetaAndDataLength) {
  std::string meta;
  TensorDesc bad = Desc(0, DType::kFloat32, {4});
  bad.nbytes = 12;
  EncodeMeta(PushPull{1, {Desc(0, DType::kInt8, {1}), bad}}, &meta);
  std::string frame;
  EncodeFramePrefix(MsgType::kPushPull, 3, meta, 13, &frame);
  ExpectError(frame + std::string(13, 'd'), StatusCode::kCorruption,
              "push_pull: tensor 1: nbytes 12 != numel 4 x 4 bytes (float32)");
  EncodeMeta(Pull{1}, &meta);
  EncodeFramePrefix(MsgType::kPull, 3, meta, 2, &frame);
  ExpectError(frame + "dd", StatusCode::kCorruption,
              "pull: data section is 2 bytes, expected 0");
  EncodeFramePrefix(MsgType::kPull, 3, meta + "x", 0, &frame);
  ExpectError(frame, StatusCode::kCorruption, "pull: 1 trailing byte");
}

TEST(FrameReaderTest, StaysInError) {
  std::string bad = SampleFrame();
  bad[8] = 1;  // a flag bit
  FrameReader reader;
  std::string_view in = bad;
  ASSERT_EQ(reader.Feed(&in), State::kError);
  const std::string message = reader.status().message();
  const std::string good = SampleFrame();
  std::string_view next = good;
  EXPECT_EQ(reader.Feed(&next), State::kError);
  EXPECT_EQ(next.size(), good.size());  // nothing consumed
  EXPECT_EQ(reader.status().message(), message);
}

TEST(FrameReaderTest, SteadyStateAllocatesNothing) {
  const std::string frame = SampleFrame();
  FrameReader reader;
  PushPull out;
  for (int round = 0; round < 3; ++round) {
    AllocCounter allocs;
    std::string_view a(frame.data(), 50);
    std::string_view b(frame.data() + 50, frame.size() - 50);
    const State s1 = reader.Feed(&a);
    const State s2 = reader.Feed(&b);
    const bool decoded = DecodeMeta(reader.meta(), &out).ok();
    allocs.Stop();
    ASSERT_EQ(s1, State::kNeedMore);
    ASSERT_EQ(s2, State::kFrame);
    ASSERT_TRUE(decoded);
    if (round > 0) {
      EXPECT_EQ(allocs.count(), 0u) << "round " << round;
    }
  }
}

// A byte range of SampleFrame() and what flipping any byte in it does.
struct Region {
  size_t begin, end;
  StatusCode code;   // kOk: the frame still decodes, carrying the new value
  const char* what;  // substring of the error message
};

std::vector<Region> SampleFrameRegions() {
  constexpr StatusCode kC = StatusCode::kCorruption;
  constexpr StatusCode kOk = StatusCode::kOk;
  return {
      {0, 4, kC, "frame header: magic is"},
      {4, 6, StatusCode::kIncompatible, "protocol version"},
      {6, 8, kC, "frame header: type"},
      {8, 12, kC, "frame header: flags"},
      {12, 13, kC, "push_pull: data section is 59 bytes, descriptors say 40"},
      {13, 20, kC, "exceeds max_frame_bytes 4096"},
      {20, 28, kOk, ""},  // request_id
      {28, 32, kC, "frame: meta_len"},
      {32, 40, kOk, ""},  // version
      {40, 44, kC, "push_pull: count"},
      {44, 48, kOk, ""},  // tensor 0: key
      {48, 49, kC, "push_pull: tensor 0: dtype 254 is unknown"},
      {49, 50, kC, "push_pull: tensor 0: codec 255 is unknown"},
      {50, 51, kC, "push_pull: tensor 0: ndim 253 exceeds 8"},
      {51, 67, kC, "push_pull: tensor 0: "},  // dims
      {67, 75, kC, "push_pull: tensor 0: nbytes"},
      {75, 79, kOk, ""},  // tensor 1: key
      {79, 80, kC, "push_pull: tensor 1: dtype 250 is unknown"},
      {80, 81, kC, "push_pull: tensor 1: codec 255 is unknown"},
      {81, 82, kC, "push_pull: tensor 1: ndim 254 exceeds 8"},
      {82, 90, kC, "push_pull: tensor 1: "},  // dims
      {90, 98, kC, "push_pull: tensor 1: nbytes"},
      {98, 102, kC, "push_pull: count"},   // sparse rows
      {102, 106, kC, "push_pull: count"},  // row requests
      {106, 146, kOk, ""},                 // data
  };
}

void ExpectFlipOutcome(const std::string& frame, size_t i, const Region& r) {
  std::string f = frame;
  f[i] = static_cast<char>(f[i] ^ 0xFF);
  FrameReader reader(4096);
  std::string_view in = f;
  const State state = reader.Feed(&in);
  if (r.code == StatusCode::kOk) {
    ASSERT_EQ(state, State::kFrame) << "byte " << i;
    EXPECT_TRUE(in.empty());
    EXPECT_EQ(reader.header().request_id, DecodeFixed64(f.data() + 20));
    EXPECT_EQ(f.substr(32),
              std::string(reader.meta()) + std::string(reader.data()))
        << "byte " << i;
    return;
  }
  ASSERT_EQ(state, State::kError) << "byte " << i;
  EXPECT_EQ(reader.status().code(), r.code) << "byte " << i;
  EXPECT_NE(reader.status().message().find(r.what), std::string::npos)
      << "byte " << i << ": " << reader.status().message();
}

// Flips every byte of SampleFrame() and checks the outcome field by field.
TEST(FrameReaderTest, FlipEachByteGivesTheExactError) {
  const std::string frame = SampleFrame();
  ASSERT_EQ(frame.size(), 146u);
  size_t covered = 0;
  for (const Region& r : SampleFrameRegions()) {
    ASSERT_EQ(r.begin, covered);  // the table leaves no byte out
    for (size_t i = r.begin; i < r.end; ++i)
      ExpectFlipOutcome(frame, i, r);
    covered = r.end;
  }
  EXPECT_EQ(covered, frame.size());
}

// Every frame type, every byte, a few bit patterns: a frame or a Status.
TEST(FrameReaderTest, FlippedBytesNeverCrash) {
  for (const std::string& frame : FrameOfEveryType()) {
    for (size_t i = 0; i < frame.size(); ++i) {
      for (int mask : {0x01, 0x80, 0xFF}) {
        std::string f = frame;
        f[i] = static_cast<char>(f[i] ^ mask);
        FrameReader reader;
        size_t consumed = 0;
        const State state = FeedInChunks(&reader, f, 1, &consumed);
        ASSERT_NE(state, State::kNeedMore) << "byte " << i << " mask " << mask;
        if (state == State::kFrame) {
          EXPECT_EQ(consumed, f.size());
          EXPECT_TRUE(ValidateFrame(reader.header(), reader.meta(),
                                    reader.data().size())
                          .ok());
          continue;
        }
        const Status& s = reader.status();
        EXPECT_TRUE(s.code() == StatusCode::kCorruption ||
                    s.code() == StatusCode::kIncompatible);
        EXPECT_FALSE(s.message().empty());
        EXPECT_EQ(s.message().find('\n'), std::string::npos);
      }
    }
  }
}

// A random stream: noise, a valid magic and version, or a valid header and
// meta_len of a random type followed by noise.
std::string RandomStream(std::mt19937_64* rng, int kind) {
  std::string noise = RandomBytes(rng, (*rng)() % 200);
  if (kind == 0)
    return noise;
  std::string prefix = SampleFrame().substr(0, 6);
  if (kind == 2) {
    FrameHeader h;
    h.type = static_cast<MsgType>(1 + (*rng)() % kMaxMsgType);
    h.body_len = 4 + (*rng)() % 256;
    prefix.assign(kFrameHeaderBytes + kMetaLenBytes, '\0');
    EncodeFrameHeader(h, prefix.data());
    EncodeFixed32(prefix.data() + kFrameHeaderBytes,
                  static_cast<uint32_t>((*rng)() % (h.body_len - 3)));
  }
  return prefix + noise;
}

// Feeds `bytes` in random pieces until they run out or the reader errs;
// returns the final state, never kFrame.
State FeedRandomly(FrameReader* reader, const std::string& bytes,
                   std::mt19937_64* rng) {
  State state = State::kNeedMore;
  size_t pos = 0;
  while (pos < bytes.size() && state != State::kError) {
    const size_t n = std::min<size_t>(1 + (*rng)() % 64, bytes.size() - pos);
    std::string_view piece(bytes.data() + pos, n);
    state = reader->Feed(&piece);
    pos += n - piece.size();
    EXPECT_TRUE(state != State::kNeedMore || piece.empty());
    if (state == State::kFrame) {
      EXPECT_TRUE(
          ValidateFrame(reader->header(), reader->meta(), reader->data().size())
              .ok());
    }
  }
  std::string_view none;
  return state == State::kFrame ? reader->Feed(&none) : state;
}

TEST(FrameReaderTest, RandomBytesEndInNeedMoreOrError) {
  std::mt19937_64 rng(20240601);
  int need_more = 0;
  int header_errors = 0;
  int meta_errors = 0;
  for (int i = 0; i < 10000; ++i) {
    FrameReader reader(1 << 16);
    const State state = FeedRandomly(&reader, RandomStream(&rng, i % 3), &rng);
    ASSERT_TRUE(state == State::kNeedMore || state == State::kError) << i;
    if (state == State::kNeedMore) {
      ++need_more;
      continue;
    }
    const Status& s = reader.status();
    ASSERT_TRUE(s.code() == StatusCode::kCorruption ||
                s.code() == StatusCode::kIncompatible)
        << s.ToString();
    ASSERT_EQ(s.message().find('\n'), std::string::npos);
    ++(s.message().rfind("frame", 0) == 0 ? header_errors : meta_errors);
  }
  // Every path was exercised, not just the magic check.
  EXPECT_GT(need_more, 100);
  EXPECT_GT(header_errors, 1000);
  EXPECT_GT(meta_errors, 100);
}

}  // namespace
}  // namespace pstrain::wire
