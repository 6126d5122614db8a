#pragma once
// Word-level tokenization of text corpora (data/text_corpus.h): a line is
// split on ASCII whitespace (space, \t, \r, \v, \f), as Python's
// bytes.split() does, and "<eos>" ends it, as pytorch/examples'
// word_language_model does. Optionally each ASCII punctuation character
// (C's ispunct: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~) becomes a token of its own,
// so "don't!" is "don", "'", "t", "!". Bytes are compared as bytes: no case
// folding, no Unicode rules. Free functions; thread-safe.

#include <string>
#include <string_view>
#include <vector>

namespace pstrain::data {

/// The token that ends every line.
inline constexpr const char* kEndOfLine = "<eos>";

struct TokenizerOptions {
  /// Split ASCII punctuation from words (the fortunes corpus); WikiText's
  /// and PTB's files are split already. Default: false.
  bool split_punctuation = false;
};

/// Appends the tokens of `line` (without its line break), then kEndOfLine,
/// to `*out`.
void TokenizeLine(std::string_view line, const TokenizerOptions& options,
                  std::vector<std::string>* out);

}  // namespace pstrain::data
