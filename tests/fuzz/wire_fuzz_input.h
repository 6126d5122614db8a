#pragma once
// The body of the wire fuzzer, apart from libFuzzer's entry point so that the
// ordinary test binary (g++, no sanitizers) can replay the kept corpus as a
// regression test, checking what each input comes to against
// tests/fuzz/corpus_outcomes.txt. Not thread-safe (uses no globals, but the
// caller's bytes must not change during the call).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/status.h"
#include "wire/frame.h"

namespace pstrain::fuzz {

/// What wire::FrameReader, the parser of net::Connection, made of an input.
struct FuzzOutcome {
  std::vector<wire::MsgType> frames;  // the frames it accepted, in order
  Status status;         // why it refused the rest; ok if it refused nothing
  bool partial = false;  // ok, but the input ended inside a frame

  /// One line: the frames' names ("-" for none; "ack*3" for a run of
  /// three), a space, then "ok", "partial" or status.ToString().
  std::string ToString() const;
};

/// Feeds `data` to every decoder of lib/wire: FrameReader (in pieces whose
/// size the first byte chooses), each message's DecodeMeta, and
/// DecodeTensorDesc. A decoder may refuse the input; it must never crash,
/// read out of bounds or allocate beyond the frame limit. A message that
/// decodes must encode back to the same bytes, and the meta of a frame
/// FrameReader accepts must decode as its type; else it aborts (a finding).
FuzzOutcome FuzzWireInput(const uint8_t* data, size_t size);

/// The frame limit FuzzWireInput gives FrameReader: 1 MiB, so that a frame
/// the fuzzer makes up cannot ask for gigabytes.
inline constexpr uint64_t kFuzzMaxFrameBytes = 1u << 20;

/// FuzzWireInput's outcome (ToString) of every file in `dir`, by file name.
std::map<std::string, std::string> CorpusOutcomes(const std::string& dir);

}  // namespace pstrain::fuzz
