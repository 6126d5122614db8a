// Every document, source file or script that the repository's text cites
// exists in the repository, and README.md is a front page that links every
// page of the user guide. A path is cited when a token names a file with a
// directory the repository has (a top-level folder such as lib, tests or
// share, or a layer of lib/ as #include names them) or is a bare Markdown
// name; it resolves against the root, lib/, tests/ (for the fakes' folder)
// or the citing file's own folder. Reads files only; starts no process.

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = PSTRAIN_SOURCE_DIR;

// The folders a cited path may start with: the root's own, and lib/'s
// layers (include-style names) and tests/'s fakes.
const std::set<std::string> kRootDirs = {
    "lib", "apps", "tests", "share", "bench", "cmake", "completions", "man"};
const std::set<std::string> kLibDirs = {
    "util",    "wire",   "net",     "ps",    "worker",    "models", "data",
    "cluster", "report", "metrics", "trace", "dashboard", "bench",  "testing"};
// Extensions of the files the repository cites; others (a checkpoint's .pt,
// an image's .jpg) name files a run makes.
const std::set<std::string> kExtensions = {
    ".md",    ".h",    ".cc",   ".inc",    ".py",  ".sh",    ".json",
    ".jsonl", ".toml", ".yaml", ".sbatch", ".txt", ".cmake", ".png"};
// Names of documents that live outside the repository, cited bare (split
// so that this file does not cite them).
const std::regex kOutsideDocs(std::string(R"((^|[^A-Za-z0-9_./-])()") +
                              "STY"
                              "LE|DES"
                              "IGN|ANCH"
                              "ORS" +
                              R"()\b(?!\.md))");

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool IsText(const std::string& content) {
  return content.find('\0') == std::string::npos;
}

// The text files the test scans, relative to the root, sorted.
std::vector<fs::path> ScannedFiles() {
  std::vector<fs::path> files = {"README.md"};
  // The guide's pages, and bench's README and scripts (not its results).
  for (const char* dir : {"share/doc", "bench"}) {
    for (const auto& e : fs::directory_iterator(kRoot / dir)) {
      if (e.is_regular_file())
        files.push_back(fs::relative(e.path(), kRoot));
    }
  }
  for (const char* dir : {"lib", "apps", "tests", "share/examples",
                          "share/scripts", "completions", "man"}) {
    for (auto it = fs::recursive_directory_iterator(kRoot / dir);
         it != fs::recursive_directory_iterator(); ++it) {
      const auto rel = fs::relative(it->path(), kRoot);
      if (rel == "tests/fuzz/corpus") {
        it.disable_recursion_pending();  // Fuzzer inputs, not prose.
        continue;
      }
      if (it->is_regular_file())
        files.push_back(rel);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Whether the cited `token` (a path with no wildcard) names a file of the
// repository, for a citation in `citing` (relative to the root).
bool Resolves(const std::string& token, const fs::path& citing) {
  for (const fs::path& base :
       {kRoot, kRoot / "lib", kRoot / "tests", kRoot / citing.parent_path()}) {
    if (fs::exists(base / token))
      return true;
  }
  // A bare Markdown name is also a page of the guide.
  return token.find('/') == std::string::npos &&
         fs::exists(kRoot / "share/doc" / token);
}

// Whether `token` is a citation to check: a file of a cited kind whose
// first folder is the repository's, or a bare Markdown name.
bool IsCitation(const std::string& token) {
  const fs::path path(token);
  if (kExtensions.count(path.extension().string()) == 0)
    return false;
  const auto slash = token.find('/');
  if (slash == std::string::npos)
    return path.extension() == ".md";
  // The docs' place under an install prefix, not in the source tree.
  if (token.rfind("share/doc/pstrain/", 0) == 0)
    return false;
  const std::string first = token.substr(0, slash);
  return first == "." || first == ".." || kRootDirs.count(first) > 0 ||
         kLibDirs.count(first) > 0;
}

// Path characters; '*', '{' and '<' mark a pattern, not a path.
bool IsTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("_.+*{}<>/-").find(c) != std::string_view::npos;
}

// The path-like tokens of `line`, less a sentence's full stop.
std::vector<std::string> Tokens(const std::string& line) {
  std::vector<std::string> tokens;
  for (size_t i = 0; i < line.size();) {
    if (!IsTokenChar(line[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < line.size() && IsTokenChar(line[end]))
      ++end;
    std::string token = line.substr(i, end - i);
    i = end;
    if (token.find_first_of("*{}<>") != std::string::npos || token[0] == '/')
      continue;  // A pattern, an absolute path, or a URL's host and path.
    while (!token.empty() && (token.back() == '.' || token.back() == '-'))
      token.pop_back();
    if (token.find('.') != std::string::npos)
      tokens.push_back(token);
  }
  return tokens;
}

// "file:line: token" for every citation in `rel` that names no file.
std::vector<std::string> MissingCitations(const fs::path& rel,
                                          const std::string& content) {
  std::vector<std::string> missing;
  std::istringstream lines(content);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    const std::string where = rel.string() + ":" + std::to_string(number);
    if (std::regex_search(line, kOutsideDocs))
      missing.push_back(where + ": a document outside the repository");
    for (const std::string& token : Tokens(line)) {
      if (IsCitation(token) && !Resolves(token, rel))
        missing.push_back(where + ": " + token);
    }
  }
  return missing;
}

TEST(CitedDocsTest, EveryCitedPathExists) {
  const auto files = ScannedFiles();
  ASSERT_GT(files.size(), 200u);
  std::vector<std::string> missing;
  for (const auto& rel : files) {
    const std::string content = Slurp(kRoot / rel);
    if (!IsText(content))
      continue;
    const auto found = MissingCitations(rel, content);
    missing.insert(missing.end(), found.begin(), found.end());
  }
  std::string report;
  for (const auto& m : missing)
    report += m + "\n";
  EXPECT_TRUE(missing.empty()) << missing.size() << " citations name no file:\n"
                               << report;
}

TEST(CitedDocsTest, ReadmeIsAFrontPageLinkingEveryGuidePage) {
  const std::string readme = Slurp(kRoot / "README.md");
  EXPECT_LE(std::count(readme.begin(), readme.end(), '\n'), 300);
  size_t pages = 0;
  for (const auto& e : fs::directory_iterator(kRoot / "share/doc")) {
    if (e.path().extension() != ".md")
      continue;
    ++pages;
    const std::string link =
        "](share/doc/" + e.path().filename().string() + ")";
    EXPECT_NE(readme.find(link), std::string::npos)
        << "README.md does not link " << e.path().filename();
  }
  EXPECT_GT(pages, 10u);
}

TEST(CitedDocsTest, FindsAMissingCitationAndSkipsWhatIsNoPath) {
  const auto missing = MissingCitations(
      "README.md",
      std::string("// See lib/ps/no_such_") +
          "file.h and share/doc/design.md.\n" +
          "// https://example.com/lib/ps/x.h, torch/nn/module.h, model.pt,\n" +
          "// lib/ps/engine*.cc, ps/{a,b}.h, wire-format.md.\n" + "// DES" +
          "IGN" + ".md\n" + "// as STY" + "LE's rules say\n");
  ASSERT_EQ(missing.size(), 3u);
  EXPECT_EQ(missing[0], std::string("README.md:1: lib/ps/no_such_") + "file.h");
  EXPECT_EQ(missing[1], std::string("README.md:4: DES") + "IGN" + ".md");
  EXPECT_EQ(missing[2], "README.md:5: a document outside the repository");
}

}  // namespace
}  // namespace pstrain::testing
