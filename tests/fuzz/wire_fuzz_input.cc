#include "fuzz/wire_fuzz_input.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "wire/frame_reader.h"
#include "wire/messages.h"
#include "wire/tensor_desc.h"

namespace pstrain::fuzz {
namespace {

// Aborts (a finding) when a decoded message does not encode back to `meta`:
// every field is read as written, so the codec pair must be exact inverses.
template <typename Msg>
void RoundTrip(std::string_view meta) {
  Msg msg;
  if (!wire::DecodeMeta(meta, &msg).ok())
    return;
  std::string again;
  wire::EncodeMeta(msg, &again);
  if (again != meta) {
    std::fprintf(stderr, "round trip of %s changed its bytes\n",
                 wire::MsgTypeName(wire::TypeOf(msg)));
    std::abort();
  }
}

void DecodeEveryMessage(std::string_view meta) {
  RoundTrip<wire::Hello>(meta);
  RoundTrip<wire::ErrorMsg>(meta);
  RoundTrip<wire::GetJob>(meta);
  RoundTrip<wire::JobSpecMsg>(meta);
  RoundTrip<wire::Register>(meta);
  RoundTrip<wire::Ack>(meta);
  RoundTrip<wire::Pull>(meta);
  RoundTrip<wire::PushPull>(meta);
  RoundTrip<wire::Params>(meta);
  RoundTrip<wire::Done>(meta);
  RoundTrip<wire::Push>(meta);
  RoundTrip<wire::AuthHello>(meta);
  RoundTrip<wire::Challenge>(meta);
  RoundTrip<wire::Auth>(meta);
}

void DecodeDescriptors(std::string_view in) {
  wire::TensorDesc desc;
  while (wire::DecodeTensorDesc(&in, &desc).ok()) {
    char out[15 + 8 * wire::kMaxTensorRank];
    wire::EncodeTensorDesc(desc, out);
  }
}

// Feeds the stream in pieces of `piece` bytes (0 = all at once), as a socket
// would deliver it, and decodes the meta of every whole frame once more.
void ReadFrames(std::string_view in, size_t piece) {
  wire::FrameReader reader(kFuzzMaxFrameBytes);
  while (!in.empty()) {
    std::string_view chunk =
        piece == 0 ? in : in.substr(0, std::min(piece, in.size()));
    in.remove_prefix(chunk.size());
    while (!chunk.empty()) {
      const wire::FrameReader::State state = reader.Feed(&chunk);
      if (state == wire::FrameReader::State::kError)
        return;
      if (state == wire::FrameReader::State::kFrame) {
        DecodeEveryMessage(reader.meta());
        if (reader.header().body_len !=
            wire::kMetaLenBytes + reader.meta().size() + reader.data().size())
          std::abort();
      }
    }
  }
}

}  // namespace

void FuzzWireInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return;
  const size_t piece = data[0] % 17;  // 0: whole input; else 1..16 bytes
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  ReadFrames(rest, piece);
  DecodeEveryMessage(rest);
  DecodeDescriptors(rest);
}

}  // namespace pstrain::fuzz
