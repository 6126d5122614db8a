#include "fuzz/wire_fuzz_input.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include "wire/compression.h"
#include "wire/frame_reader.h"
#include "wire/message_table.h"
#include "wire/messages.h"
#include "wire/tensor_desc.h"

namespace pstrain::fuzz {
namespace {

// Decodes `meta` as a Msg; returns whether it decodes. Aborts (a finding)
// when a decoded message does not encode back to `meta`: every field is
// read as written, so the codec pair must be exact inverses.
template <typename Msg>
bool RoundTrip(std::string_view meta) {
  Msg msg;
  if (!wire::DecodeMeta(meta, &msg).ok())
    return false;
  std::string again;
  wire::EncodeMeta(msg, &again);
  if (again != meta) {
    std::fprintf(stderr, "round trip of %s changed its bytes\n",
                 wire::MsgTypeName(wire::TypeOf(msg)));
    std::abort();
  }
  return true;
}

void DecodeEveryMessage(std::string_view meta) {
#define PSTRAIN_FUZZ_DECODE(value, Enum, name, Struct, Data) \
  RoundTrip<wire::Struct>(meta);
  PSTRAIN_WIRE_MESSAGES(PSTRAIN_FUZZ_DECODE)
#undef PSTRAIN_FUZZ_DECODE
}

// The frame passed ValidateFrame: its meta must decode as its type says,
// or the validator and the decoder disagree.
void DecodeAsItsType(wire::MsgType type, std::string_view meta) {
  bool ok = false;
  switch (type) {
#define PSTRAIN_FUZZ_CASE(value, Enum, name, Struct, Data) \
  case wire::MsgType::Enum:                                \
    ok = RoundTrip<wire::Struct>(meta);                    \
    break;
    PSTRAIN_WIRE_MESSAGES(PSTRAIN_FUZZ_CASE)
#undef PSTRAIN_FUZZ_CASE
  }
  if (!ok) {
    std::fprintf(stderr, "a %s frame passed ValidateFrame but not DecodeMeta\n",
                 wire::MsgTypeName(type));
    std::abort();
  }
}

void DecodeDescriptors(std::string_view in) {
  wire::TensorDesc desc;
  while (wire::DecodeTensorDesc(&in, &desc).ok()) {
    char out[15 + 8 * wire::kMaxTensorRank];
    wire::EncodeTensorDesc(desc, out);
  }
}

// A push's compressed records go through what a server does with them:
// Validate, then (when valid) DecodeAdd into an accumulator. Records of up
// to 2^20 elements are decoded, so that the accumulator stays within the
// fuzzer's allocation limit.
void CheckRecords(wire::MsgType type, std::string_view meta,
                  std::string_view data, const wire::CodecParams& params) {
  if (type != wire::MsgType::kPush && type != wire::MsgType::kPushPull)
    return;
  wire::PushPull msg;
  if (!wire::DecodeMeta(meta, &msg).ok())
    return;
  uint64_t offset = 0;
  std::vector<float> acc;
  for (const wire::TensorDesc& d : msg.grads) {
    if (d.nbytes > data.size() - offset)
      return;
    const auto* bytes = reinterpret_cast<const uint8_t*>(data.data() + offset);
    offset += d.nbytes;
    const uint64_t n = static_cast<uint64_t>(d.numel());
    if (d.codec == wire::Codec::kRaw || n > (uint64_t{1} << 20))
      continue;
    if (!wire::Validate(d.codec, params, bytes, d.nbytes, n).ok())
      continue;
    acc.assign(n, 0.0f);
    wire::DecodeAdd(d.codec, params, bytes, d.nbytes, n, 1.0f, acc.data());
  }
}

// Feeds the stream in pieces of `piece` bytes (0 = all at once), as a socket
// would deliver it, and decodes the meta of every whole frame once more.
FuzzOutcome ReadFrames(std::string_view in, size_t piece,
                       const wire::CodecParams& params) {
  FuzzOutcome outcome;
  wire::FrameReader reader(kFuzzMaxFrameBytes);
  size_t since_frame = 0;  // bytes consumed since the last whole frame
  while (!in.empty()) {
    std::string_view chunk =
        piece == 0 ? in : in.substr(0, std::min(piece, in.size()));
    in.remove_prefix(chunk.size());
    while (!chunk.empty()) {
      const size_t before = chunk.size();
      const wire::FrameReader::State state = reader.Feed(&chunk);
      since_frame += before - chunk.size();
      if (state == wire::FrameReader::State::kError) {
        outcome.status = reader.status();
        return outcome;
      }
      if (state == wire::FrameReader::State::kFrame) {
        since_frame = 0;
        const wire::FrameHeader& header = reader.header();
        outcome.frames.push_back(header.type);
        DecodeAsItsType(header.type, reader.meta());
        DecodeEveryMessage(reader.meta());
        CheckRecords(header.type, reader.meta(), reader.data(), params);
        if (header.body_len !=
            wire::kMetaLenBytes + reader.meta().size() + reader.data().size())
          std::abort();
      }
    }
  }
  outcome.partial = since_frame > 0;
  return outcome;
}

}  // namespace

std::string FuzzOutcome::ToString() const {
  std::string out;
  for (size_t i = 0; i < frames.size();) {
    size_t run = 1;
    while (i + run < frames.size() && frames[i + run] == frames[i])
      ++run;
    if (!out.empty())
      out += ',';
    out += wire::MsgTypeName(frames[i]);
    if (run > 1)
      out += '*' + std::to_string(run);
    i += run;
  }
  if (out.empty())
    out = "-";
  out += ' ';
  out += !status.ok() ? status.ToString() : partial ? "partial" : "ok";
  return out;
}

FuzzOutcome FuzzWireInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return {};
  const size_t piece = data[0] % 17;  // 0: whole input; else 1..16 bytes
  // The codecs' params are the job's, not on the wire: the first byte
  // picks the default ones or others that reach other paths.
  static const wire::CodecParams kParams[] = {{256, 0.01}, {1, 1.0}, {3, 0.5}};
  const wire::CodecParams& params = kParams[(data[0] / 17) % 3];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  FuzzOutcome outcome = ReadFrames(rest, piece, params);
  DecodeEveryMessage(rest);
  DecodeDescriptors(rest);
  return outcome;
}

std::map<std::string, std::string> CorpusOutcomes(const std::string& dir) {
  std::map<std::string, std::string> outcomes;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    const FuzzOutcome outcome = FuzzWireInput(
        reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    outcomes[entry.path().filename().string()] = outcome.ToString();
  }
  return outcomes;
}

}  // namespace pstrain::fuzz
