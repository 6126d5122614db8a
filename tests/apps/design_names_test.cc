// Every name of the project that share/doc/design.md cites in backticks is
// in the source tree (lib/, apps/, tests/): a class or function
// (`PushReader`, `Engine::Step`, `wire::kFrameTagged`; of `A::B` or a
// test's `Suite.Name`, every part in one file), a file (`push_reader.h`,
// `job/optimizer.h`, `lib/ps/engine`), and a name cited as a file's
// (`ps_client.h`'s `SetPriority`, `StepSums` (`step_sums.h`),
// `Engine::Step` in `engine_updates.cc`) in that file. Flags, message
// names, JSON fields, commands and code fragments (lower case, with spaces
// or symbols) are not names of the project and are skipped. Reads files
// only; starts no process.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kTop = PSTRAIN_SOURCE_DIR;

// The project's namespaces, one per layer of lib/: `net::Connection` is
// the class `Connection`.
const std::set<std::string> kNamespaces = {
    "util",    "wire",   "net",     "ps",    "worker",    "models", "data",
    "cluster", "report", "metrics", "trace", "dashboard", "bench",  "testing"};
// Classes of other projects that design.md names as its models (leveldb's).
const std::set<std::string> kOtherProjects = {"DBImpl", "VersionSet",
                                              "MemTable", "WriteBatch"};

std::string Contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::set<std::string> Words(const std::string& text) {
  std::set<std::string> words;
  for (size_t i = 0; i < text.size();) {
    const auto is_word = [&](size_t j) {
      return std::isalnum(static_cast<unsigned char>(text[j])) ||
             text[j] == '_';
    };
    if (!is_word(i)) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && is_word(end))
      ++end;
    words.insert(text.substr(i, end - i));
    i = end;
  }
  return words;
}

// The source tree as the test reads it: each file's words, and every file
// and folder's path (relative to the root).
struct Tree {
  std::map<std::string, std::set<std::string>> words;
  std::vector<std::string> paths;
};

Tree ReadTree(const fs::path& root) {
  Tree tree;
  for (const char* dir : {"lib", "apps", "tests", "share", "bench", "cmake"}) {
    if (!fs::exists(root / dir))
      continue;
    tree.paths.push_back(dir);
    for (auto it = fs::recursive_directory_iterator(root / dir);
         it != fs::recursive_directory_iterator(); ++it) {
      const std::string rel = fs::relative(it->path(), root).string();
      tree.paths.push_back(rel);
      if (rel == "tests/fuzz/corpus")
        it.disable_recursion_pending();  // Fuzzer inputs, not source.
      const std::string top = rel.substr(0, rel.find('/'));
      // The names this file uses as examples prove nothing.
      if (!it->is_regular_file() ||
          it->path().filename() == fs::path(__FILE__).filename() ||
          (top != "lib" && top != "apps" && top != "tests"))
        continue;
      tree.words[rel] = Words(Contents(it->path()));
    }
  }
  return tree;
}

// The files and folders of `tree` that `path` (`a.h`, `dir/a.h`, `lib/x`)
// names.
std::vector<std::string> Resolve(const Tree& tree, const std::string& path) {
  std::vector<std::string> found;
  for (const auto& p : tree.paths) {
    if (p == path ||
        (p.size() > path.size() &&
         p.compare(p.size() - path.size(), path.size(), path) == 0 &&
         p[p.size() - path.size() - 1] == '/'))
      found.push_back(p);
  }
  return found;
}

bool IsSourcePath(const std::string& token) {
  static const std::regex path(R"re(([\w.-]+/)*[\w-]+\.(h|cc|inc))re");
  static const std::regex folder(R"re((lib|apps|tests)(/[\w-]+)*/?)re");
  return std::regex_match(token, path) || std::regex_match(token, folder);
}

// The parts of `token` to find when it names a class or function of the
// project, less its namespace ("Model", "Await" for
// `models::Model::Await()`); none for anything else.
std::vector<std::string> NameParts(std::string token) {
  static const std::regex name(R"re([A-Za-z_]\w*((::|\.)[A-Za-z_]\w*)*)re");
  static const std::regex call_or_template(R"re((\(\)|<\w+>)$)re");
  token = std::regex_replace(token, call_or_template, "");
  if (!std::regex_match(token, name))
    return {};
  std::vector<std::string> parts;
  std::istringstream in(std::regex_replace(token, std::regex("::|\\."), " "));
  for (std::string p; in >> p;)
    parts.push_back(p);
  if (parts.size() > 1 && kNamespaces.count(parts[0]) > 0)
    parts.erase(parts.begin());
  // CamelCase (not ALL_CAPS, a system's macro) or a kConstant, unless
  // qualified by a class or a namespace of the project.
  static const std::regex project(R"re([A-Z]\w*[a-z]\w*|k[A-Z]\w*)re");
  if (!std::regex_match(parts[0], project) ||
      kOtherProjects.count(parts[0]) > 0)
    return {};
  return parts;
}

bool InOneFile(const Tree& tree, const std::vector<std::string>& parts,
               const std::vector<std::string>& files) {
  for (const auto& f : files) {
    const auto it = tree.words.find(f);
    if (it != tree.words.end() &&
        std::all_of(parts.begin(), parts.end(),
                    [&](const auto& p) { return it->second.count(p) > 0; }))
      return true;
  }
  return false;
}

// `text` with each fenced code block's lines blanked (their number kept).
std::string Prose(const std::string& text) {
  std::istringstream lines(text);
  std::string prose;
  bool fenced = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0)
      fenced = !fenced;
    prose += (fenced || line.rfind("```", 0) == 0 ? "" : line) + "\n";
  }
  return prose;
}

// "<doc>:<line>: " for the match `it` of `prose`.
std::string Where(const std::string& doc, const std::string& prose,
                  const std::sregex_iterator& it) {
  const auto line =
      std::count(prose.begin(), prose.begin() + it->position(), '\n') + 1;
  return doc + ":" + std::to_string(line) + ": ";
}

// Whether `tree` holds what `token` cites: a file or folder, a name of the
// project, or something that is neither.
bool Holds(const Tree& tree, const std::string& token) {
  if (IsSourcePath(token)) {
    std::string path = token;
    if (path.back() == '/')
      path.pop_back();
    return !Resolve(tree, path).empty();
  }
  const auto parts = NameParts(token);
  std::vector<std::string> files;
  for (const auto& [f, w] : tree.words)
    files.push_back(f);
  return parts.empty() || InOneFile(tree, parts, files);
}

// "<doc>:<line>: `<token>`" for each cited name of `prose` that `tree`
// does not hold, and "... (in <file>)" for a name cited as a file's that
// the file does not hold.
std::vector<std::string> MissingNames(const std::string& doc,
                                      const std::string& text,
                                      const Tree& tree) {
  const std::string prose = Prose(text);
  static const std::regex quoted("`([^`]+)`");
  // `path`'s `Name`, `Name` (`path` or `Name` in `path`: the name is that
  // file's.
  static const std::regex owned(
      R"re(`([\w./-]+)`'s `([^`]+)`|`([^`]+)` (\(|in )`([\w./-]+)`)re");
  std::vector<std::string> missing;
  for (std::sregex_iterator it(prose.begin(), prose.end(), quoted), end;
       it != end; ++it) {
    if (!Holds(tree, (*it)[1]))
      missing.push_back(Where(doc, prose, it) + "`" + (*it)[1].str() + "`");
  }
  for (std::sregex_iterator it(prose.begin(), prose.end(), owned), end;
       it != end; ++it) {
    const bool possessive = (*it)[1].matched;
    const std::string path = possessive ? (*it)[1] : (*it)[5];
    const std::string token = possessive ? (*it)[2] : (*it)[3];
    const auto parts = NameParts(token);
    const auto in = Resolve(tree, path);
    if (!IsSourcePath(path) || parts.empty() || in.empty())
      continue;  // Not a name and a file, or a missing file named above.
    if (!InOneFile(tree, {parts.back()}, in))
      missing.push_back(Where(doc, prose, it) + "`" + token + "` (in " + path +
                        ")");
  }
  return missing;
}

TEST(DesignNamesTest, EveryNameDesignMdCitesIsInTheTree) {
  const Tree tree = ReadTree(kTop);
  ASSERT_GT(tree.words.size(), 400u);
  const auto missing =
      MissingNames("design.md", Contents(kTop / "share/doc/design.md"), tree);
  std::string report;
  for (const auto& m : missing)
    report += m + "\n";
  EXPECT_TRUE(missing.empty())
      << missing.size() << " names of share/doc/design.md are not in lib/, "
      << "apps/ or tests/:\n"
      << report;
}

// The check can fail: on a made-up tree, a name that is nowhere, a
// member not beside its class, a file that is not there and a name not in
// the file it is cited as of are each named; what is no name is skipped.
TEST(DesignNamesTest, FindsAMadeUpNameAndSkipsWhatIsNoName) {
  const fs::path root = fs::temp_directory_path() /
                        ("design_names_test_" + std::to_string(::getpid()));
  fs::create_directories(root / "lib/ps/engine");
  fs::create_directories(root / "tests");
  std::ofstream(root / "lib/ps/engine/push_reader.h")
      << "class PushReader { void CheckRowIds(); };\n";
  std::ofstream(root / "tests" / "other.cc") << "void Step(); int kTick;\n";
  const Tree tree = ReadTree(root);
  const std::string made_up = std::string("Frob") + "nicator";
  const auto missing = MissingNames(
      "doc",
      "`PushReader::CheckRowIds`, `ps::PushReader`, `" + made_up +
          "`,\n`PushReader::Step` `engine/push_reader.h` `lib/ps/engine/`\n"
          "`lib/ps/no_such_"
          "file.cc`, `push_reader.h`'s `Step`, `--mode`,\n"
          "`get_job`, `PS_CHECK`, `asio::post`, `fc1.weight`, `a b()`,\n"
          "`DBImpl`, `Step()` (`push_reader.h`), `PushReader::CheckRowIds` in\n"
          "`push_reader.h`, `PushReader::CheckRowIds` in `other.cc`\n```\n`" +
          made_up + "`\n```\n",
      tree);
  fs::remove_all(root);
  EXPECT_EQ(missing, (std::vector<std::string>{
                         "doc:1: `" + made_up + "`",
                         "doc:2: `PushReader::Step`",
                         "doc:3: `lib/ps/no_such_"
                         "file.cc`",
                         "doc:3: `Step` (in push_reader.h)",
                         "doc:5: `Step()` (in push_reader.h)",
                         "doc:6: `PushReader::CheckRowIds` (in other.cc)",
                     }));
}

}  // namespace
}  // namespace pstrain::testing
