#include "data/text_corpus.h"

#include <string_view>
#include <vector>

#include <torch/torch.h>

#include "data/fortunes.h"
#include "data/image_decode.h"
#include "data/source_util.h"
#include "data/tokenizer.h"

namespace pstrain::data {
namespace {

// The tokens of `lines`; *words counts those that are not "<eos>".
std::vector<std::string> Tokenize(const std::vector<std::string>& lines,
                                  const TokenizerOptions& options,
                                  int64_t* words) {
  std::vector<std::string> tokens;
  for (const auto& line : lines)
    TokenizeLine(line, options, &tokens);
  *words = static_cast<int64_t>(tokens.size() - lines.size());
  return tokens;
}

std::vector<std::string> Lines(std::string_view bytes) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string_view::npos)
      end = bytes.size();
    lines.emplace_back(bytes.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

struct SplitLines {
  std::string name;  // for errors: a path, or "the fortunes' test split"
  std::vector<std::string> lines;
};

Result<std::vector<SplitLines>> ReadSplits(const TextCorpusOptions& o,
                                           int64_t* fortunes) {
  std::vector<SplitLines> splits;
  if (o.data_dir.empty()) {
    PS_ASSIGN_OR_RETURN(FortuneSplits f, ReadFortunes(o.fortunes_dir));
    const std::string& dir = o.fortunes_dir;
    splits.push_back({dir + " (training split)", std::move(f.train)});
    splits.push_back({dir + " (validation split)", std::move(f.valid)});
    splits.push_back({dir + " (test split)", std::move(f.test)});
    *fortunes = f.fortunes;
    return splits;
  }
  for (const char* file : {"train.txt", "valid.txt", "test.txt"}) {
    const std::string path = internal::JoinPath(o.data_dir, file);
    auto bytes = ReadFileBytes(path);
    if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound)
      return NotFound(path +
                      " not found (--dataset text reads train.txt, "
                      "valid.txt and test.txt)");
    PS_RETURN_IF_ERROR(bytes.status());
    splits.push_back({path, Lines(*bytes)});
  }
  *fortunes = 0;
  return splits;
}

}  // namespace

Result<TextCorpus> LoadTextCorpus(const TextCorpusOptions& o) {
  if (o.vocab_size < 1) {
    return InvalidArgument("--vocab_size " + std::to_string(o.vocab_size) +
                           ": expected >= 1");
  }
  TextCorpus corpus;
  PS_ASSIGN_OR_RETURN(std::vector<SplitLines> splits,
                      ReadSplits(o, &corpus.fortunes));
  TokenizerOptions tokenizer;
  tokenizer.split_punctuation = o.data_dir.empty();
  std::vector<std::vector<std::string>> tokens;
  for (const auto& split : splits) {
    int64_t words = 0;
    tokens.push_back(Tokenize(split.lines, tokenizer, &words));
    if (words == 0)
      return InvalidArgument(split.name + " is empty (no words)");
  }
  corpus.vocab = Vocabulary::Build(tokens[0], o.vocab_size);
  corpus.train = corpus.vocab.Encode(tokens[0]);
  corpus.valid = corpus.vocab.Encode(tokens[1]);
  corpus.test = corpus.vocab.Encode(tokens[2]);
  return corpus;
}

double UnknownRate(const torch::Tensor& ids, const Vocabulary& vocab) {
  if (ids.numel() == 0)
    return 0;
  return ids.eq(vocab.unk_id()).sum().item<double>() /
         static_cast<double>(ids.numel());
}

}  // namespace pstrain::data
