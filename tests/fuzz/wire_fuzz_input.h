#pragma once
// The body of the wire fuzzer, apart from libFuzzer's entry point so that the
// ordinary test binary (g++, no sanitizers) can replay the kept corpus as a
// regression test. Not thread-safe (uses no globals, but the caller's bytes
// must not change during the call).

#include <cstddef>
#include <cstdint>

namespace pstrain::fuzz {

/// Feeds `data` to every decoder of lib/wire: FrameReader (in pieces whose
/// size the first byte chooses), each message's DecodeMeta, and
/// DecodeTensorDesc. A decoder may refuse the input; it must never crash,
/// read out of bounds or allocate beyond the frame limit. A message that
/// decodes must encode back to the same bytes; a broken round trip aborts.
void FuzzWireInput(const uint8_t* data, size_t size);

/// The frame limit FuzzWireInput gives FrameReader: 1 MiB, so that a frame
/// the fuzzer makes up cannot ask for gigabytes.
inline constexpr uint64_t kFuzzMaxFrameBytes = 1u << 20;

}  // namespace pstrain::fuzz
