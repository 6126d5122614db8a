// The source tree keeps STYLE's rules: every C++ file is as the root
// .clang-format formats it (clang-format runs as a process), and no file
// under lib/ or apps/ runs past 400 lines.

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

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
  std::string cmd = "cd '" + std::string(PSTRAIN_SOURCE_DIR) +
                    "' && clang-format --dry-run --Werror";
  for (const auto& f : files)
    cmd += " '" + f.string() + "'";
  cmd += " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  ASSERT_TRUE(pipe);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe.get()))
    out.append(buf, n);
  const int status = pclose(pipe.release());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << out.substr(0, 4000);
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
