// Prints the outcome of every input of a corpus folder in the format of
// tests/fuzz/corpus_outcomes.txt, which FuzzCorpusTest checks; see
// update_outcomes.sh.
//   wire_corpus_outcomes CORPUS_DIR > corpus_outcomes.txt

#include <cstdio>

#include "fuzz/wire_fuzz_input.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  std::printf(
      "# What FuzzWireInput makes of each input of tests/fuzz/corpus: the\n"
      "# frames wire::FrameReader accepts, then ok, partial (the input ends\n"
      "# inside a frame) or the exact Status that refuses the rest.\n"
      "# FuzzCorpusTest checks it. After a change to the corpus or to the\n"
      "# wire checks, regenerate with tests/fuzz/update_outcomes.sh and\n"
      "# review the diff.\n");
  for (const auto& [name, outcome] : pstrain::fuzz::CorpusOutcomes(argv[1]))
    std::printf("%s %s\n", name.c_str(), outcome.c_str());
  return 0;
}
