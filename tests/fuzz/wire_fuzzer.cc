// libFuzzer entry point for the wire decoders; see wire_fuzz_input.h and
// run.sh (which builds this with -fsanitize=fuzzer,address,undefined).

#include <cstddef>
#include <cstdint>

#include "fuzz/wire_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)pstrain::fuzz::FuzzWireInput(data, size);
  return 0;
}
