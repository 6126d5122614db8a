#pragma once
// TextCorpus: a word-level language-modelling corpus as id streams over
// its vocabulary (data/vocabulary.h), the `--dataset text` of a job.
// With a data_dir it reads train.txt, valid.txt and test.txt there
// (WikiText-2's and PTB's layout), tokens split on whitespace only; without
// one it reads the fortunes corpus (data/fortunes.h), punctuation split
// from words. Every line ends with "<eos>" (data/tokenizer.h). The
// vocabulary is built from the training split alone. A value type (copies
// share the tensors, which nothing writes to).

#include <cstdint>
#include <string>

#include <torch/types.h>

#include "data/fortunes.h"
#include "data/vocabulary.h"
#include "util/result.h"

namespace pstrain::data {

enum class TextSplit { kTrain, kValid, kTest };

struct TextCorpusOptions {
  /// "" (the default): the fortunes corpus in fortunes_dir.
  std::string data_dir;
  /// Where the fortunes are. Default: kFortunesDir.
  std::string fortunes_dir = kFortunesDir;
  /// The most frequent training words kept; the vocabulary adds <unk>.
  /// REQUIRES: >= 1. Default: 10000.
  int64_t vocab_size = 10000;
};

struct TextCorpus {
  Vocabulary vocab;
  /// Token ids, int64 [n], CPU, contiguous, one per split.
  torch::Tensor train, valid, test;
  /// Fortunes read (the fortunes corpus), else 0.
  int64_t fortunes = 0;

  const torch::Tensor& split(TextSplit s) const {
    return s == TextSplit::kTrain   ? train
           : s == TextSplit::kValid ? valid
                                    : test;
  }
};

/// Loads the corpus. Errors, each one line naming the path: kNotFound for a
/// missing file or directory; kInvalidArgument for a file, or a split of
/// the fortunes, with no text (only whitespace), and for vocab_size < 1;
/// kIOError for a read error.
Result<TextCorpus> LoadTextCorpus(const TextCorpusOptions& options);

/// The fraction of `ids` that are vocab.unk_id(); 0 for none.
double UnknownRate(const torch::Tensor& ids, const Vocabulary& vocab);

}  // namespace pstrain::data
