#include "data/tokenizer.h"

namespace pstrain::data {
namespace {

// The C locale's isspace and ispunct, without the locale.
bool IsSpace(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

bool IsPunct(unsigned char c) {
  return c > ' ' && c < 0x7f && !(c >= '0' && c <= '9') &&
         !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z');
}

}  // namespace

void TokenizeLine(std::string_view line, const TokenizerOptions& options,
                  std::vector<std::string>* out) {
  size_t i = 0;
  while (i < line.size()) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (IsSpace(c)) {
      ++i;
      continue;
    }
    if (options.split_punctuation && IsPunct(c)) {
      out->emplace_back(1, line[i++]);
      continue;
    }
    size_t end = i;
    while (end < line.size()) {
      const unsigned char e = static_cast<unsigned char>(line[end]);
      if (IsSpace(e) || (options.split_punctuation && IsPunct(e)))
        break;
      ++end;
    }
    out->emplace_back(line.substr(i, end - i));
    i = end;
  }
  out->emplace_back(kEndOfLine);
}

}  // namespace pstrain::data
