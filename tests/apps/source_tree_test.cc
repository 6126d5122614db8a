// The source tree keeps the rules of share/doc/design.md: every C++ file
// is as the root .clang-format formats it (clang-format runs as a
// process), and no file under lib/ or apps/ runs past 400 lines.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/process.h"

namespace pstrain::testing {
namespace {

namespace fs = std::filesystem;

// The C++ files under the source tree's `dirs`, sorted.
std::vector<fs::path> CppFiles(const std::vector<std::string>& dirs) {
  std::vector<fs::path> files;
  for (const auto& dir : dirs) {
    for (const auto& e :
         fs::recursive_directory_iterator(fs::path(PSTRAIN_SOURCE_DIR) / dir)) {
      const auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".cc" || ext == ".h"))
        files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(SourceTreeTest, EveryCppFileIsClangFormatted) {
  const auto files = CppFiles({"lib", "apps", "tests", "bench"});
  ASSERT_GT(files.size(), 100u);
  std::vector<std::string> argv = {"/usr/bin/clang-format", "--dry-run",
                                   "--Werror"};
  for (const auto& f : files)
    argv.push_back(f.string());
  // clang-format finds the root .clang-format from each file's path.
  auto r = Process(argv).Wait(300);
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 4000);
}

TEST(SourceTreeTest, NoFileUnderLibOrAppsExceeds400Lines) {
  for (const auto& f : CppFiles({"lib", "apps"})) {
    std::ifstream in(f);
    size_t lines = 0;
    for (std::string line; std::getline(in, line);)
      ++lines;
    EXPECT_LE(lines, 400u) << f;
  }
}

}  // namespace
}  // namespace pstrain::testing
