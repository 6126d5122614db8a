#pragma once
// Vocabulary: the words a language model knows, each with an id. Built from
// a training token stream: the `max_words` most frequent tokens, most
// frequent first, ties broken by byte order of the word (so "The" before
// "the" before "zebra"), ids 0, 1, ... in that order; then "<unk>", which
// stands for every other word, unless it is among them already (WikiText's
// files hold "<unk>" tokens). A value type; const methods are thread-safe.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/types.h>

namespace pstrain::data {

/// The token of words outside the vocabulary.
inline constexpr const char* kUnknownWord = "<unk>";

class Vocabulary {
 public:
  /// As above. REQUIRES: max_words >= 1.
  static Vocabulary Build(const std::vector<std::string>& tokens,
                          int64_t max_words);

  /// Words, <unk> included.
  int64_t size() const { return static_cast<int64_t>(words_.size()); }
  int64_t unk_id() const { return unk_id_; }
  /// The id of `word`, unk_id() when it is not in the vocabulary.
  int64_t Id(const std::string& word) const;
  /// REQUIRES: 0 <= id < size().
  const std::string& word(int64_t id) const { return words_.at(id); }

  /// The ids of `tokens`, int64 [tokens.size()], CPU.
  torch::Tensor Encode(const std::vector<std::string>& tokens) const;

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int64_t> ids_;
  int64_t unk_id_ = 0;
};

}  // namespace pstrain::data
