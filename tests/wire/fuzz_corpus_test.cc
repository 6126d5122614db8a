// Replays the wire fuzzer's kept corpus (tests/fuzz/corpus) through the
// fuzzer's own body, so that every input that once reached new code, and
// every fixed finding, stays a regression test of the ordinary build.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz/wire_fuzz_input.h"

namespace pstrain::fuzz {
namespace {

TEST(FuzzCorpusTest, EveryCorpusInputDecodesWithoutCrashing) {
  const std::filesystem::path dir =
      std::filesystem::path(PSTRAIN_SOURCE_DIR) / "tests/fuzz/corpus";
  int inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    FuzzWireInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++inputs;
  }
  // The seeds alone are 23 files (tests/fuzz/make_seeds.py).
  EXPECT_GE(inputs, 23);
}

}  // namespace
}  // namespace pstrain::fuzz
