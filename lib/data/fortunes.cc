#include "data/fortunes.h"

#include <algorithm>
#include <filesystem>

#include "data/image_decode.h"

namespace pstrain::data {
namespace {

namespace fs = std::filesystem;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Result<std::vector<std::string>> FortuneFiles(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return NotFound(dir +
                    " not found; install Debian's package fortunes or pass "
                    "--data_dir");
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_symlink() || !entry.is_regular_file() || name.empty() ||
        name[0] == '.' || EndsWith(name, ".dat") || EndsWith(name, ".u8"))
      continue;
    files.push_back(entry.path().string());
  }
  if (ec)
    return IOError(dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// Appends the fortune's lines to its split.
void AddFortune(const std::vector<std::string_view>& lines,
                FortuneSplits* out) {
  if (lines.empty())
    return;
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0)
      text += '\n';
    text.append(lines[i]);
  }
  const uint64_t bucket = Fnv1a64(text) % 10;
  auto& split = bucket == 0 ? out->valid : bucket == 1 ? out->test : out->train;
  split.insert(split.end(), lines.begin(), lines.end());
  ++out->fortunes;
}

void SplitFile(std::string_view bytes, FortuneSplits* out) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string_view::npos)
      end = bytes.size();
    const std::string_view line = bytes.substr(start, end - start);
    if (line == "%") {
      AddFortune(lines, out);
      lines.clear();
    } else {
      lines.push_back(line);
    }
    start = end + 1;
  }
  AddFortune(lines, out);
}

}  // namespace

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

Result<FortuneSplits> ReadFortunes(const std::string& dir) {
  PS_ASSIGN_OR_RETURN(std::vector<std::string> files, FortuneFiles(dir));
  FortuneSplits out;
  for (const auto& path : files) {
    PS_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
    SplitFile(bytes, &out);
  }
  if (out.fortunes == 0)
    return InvalidArgument(dir + " holds no fortunes");
  return out;
}

}  // namespace pstrain::data
