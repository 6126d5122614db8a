#include "data/vocabulary.h"

#include <algorithm>

#include <torch/torch.h>

#include "util/check.h"

namespace pstrain::data {

Vocabulary Vocabulary::Build(const std::vector<std::string>& tokens,
                             int64_t max_words) {
  PS_CHECK(max_words >= 1) << "max_words " << max_words;
  std::unordered_map<std::string, int64_t> counts;
  for (const auto& t : tokens)
    ++counts[t];
  std::vector<std::pair<std::string, int64_t>> ranked(counts.begin(),
                                                      counts.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (static_cast<int64_t>(ranked.size()) > max_words)
    ranked.resize(max_words);
  Vocabulary v;
  for (auto& [word, count] : ranked) {
    v.ids_.emplace(word, static_cast<int64_t>(v.words_.size()));
    v.words_.push_back(std::move(word));
  }
  auto unk = v.ids_.find(kUnknownWord);
  if (unk == v.ids_.end()) {
    v.unk_id_ = static_cast<int64_t>(v.words_.size());
    v.ids_.emplace(kUnknownWord, v.unk_id_);
    v.words_.emplace_back(kUnknownWord);
  } else {
    v.unk_id_ = unk->second;
  }
  return v;
}

int64_t Vocabulary::Id(const std::string& word) const {
  auto it = ids_.find(word);
  return it == ids_.end() ? unk_id_ : it->second;
}

torch::Tensor Vocabulary::Encode(const std::vector<std::string>& tokens) const {
  torch::Tensor ids =
      torch::empty({static_cast<int64_t>(tokens.size())}, torch::kInt64);
  int64_t* out = ids.data_ptr<int64_t>();
  for (const auto& t : tokens)
    *out++ = Id(t);
  return ids;
}

}  // namespace pstrain::data
