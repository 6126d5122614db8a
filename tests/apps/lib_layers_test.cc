// lib/'s layers depend on each other as share/doc/design.md's "Layers"
// table says: every folder of lib/ is a row, a row depends only on rows
// above it, a file of a layer includes only its own layer's headers and
// those of the layers its row names (`ps/job` names one part of lib/ps),
// each library links only those, and a library links, itself or through
// what it links, every library whose headers its sources include. Static
// libraries do not fail at link time on an include they do not link, so
// only this test tells. Reads files only; starts no process.

#include <unistd.h>

#include <algorithm>
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

const fs::path kSource = PSTRAIN_SOURCE_DIR;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One row of the table: lib/<name>, and the layers (or "ps/<part>") its
// "depends on" cell names in backticks.
struct Layer {
  std::string name;
  std::set<std::string> depends;
};

// The rows of the "## Layers" section of `design` (design.md's text), in
// the table's order.
std::vector<Layer> LayersTable(const std::string& design) {
  const auto begin = design.find("\n## Layers\n");
  if (begin == std::string::npos)
    return {};
  const auto end = design.find("\n## ", begin + 1);
  std::istringstream lines(design.substr(begin, end - begin));
  static const std::regex row(R"re(^\| `lib/(\w+)` \|.*\| ([^|]*) \|$)re");
  static const std::regex named(R"re(`(\w+(/\w+)?)`)re");
  std::vector<Layer> layers;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row))
      continue;
    Layer layer{m[1], {}};
    const std::string cell = m[2];
    for (std::sregex_iterator it(cell.begin(), cell.end(), named), e; it != e;
         ++it)
      layer.depends.insert((*it)[1]);
    layers.push_back(layer);
  }
  return layers;
}

// "a" for "a/b/c.h", "a/b" with `parts`.
std::string Head(const std::string& path, bool parts = false) {
  auto slash = path.find('/');
  if (parts && slash != std::string::npos)
    slash = path.find('/', slash + 1);
  return path.substr(0, slash);
}

int IndexOf(const std::vector<Layer>& layers, const std::string& name) {
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].name == name)
      return static_cast<int>(i);
  }
  return -1;
}

// Whether a file of `layer` may use layer-or-part `other` ("net",
// "ps/job").
bool MayUse(const Layer& layer, const std::string& other) {
  return Head(other) == layer.name || layer.depends.count(Head(other)) > 0 ||
         layer.depends.count(other) > 0;
}

// The paths of `text`'s `#include "..."` lines that have a folder.
std::vector<std::string> Includes(const std::string& text) {
  static const std::regex include(R"re(#include "(\w+/[^"]*)")re");
  std::vector<std::string> paths;
  for (std::sregex_iterator it(text.begin(), text.end(), include), e; it != e;
       ++it)
    paths.push_back((*it)[1]);
  return paths;
}

// Every C++ source under `dir`, sorted.
std::vector<fs::path> Sources(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".h" || ext == ".cc" || ext == ".inc"))
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The rows that name a layer `layers` has no row above them for, and the
// folders of `lib` that no row names.
std::vector<std::string> TableErrors(const fs::path& lib,
                                     const std::vector<Layer>& layers) {
  std::vector<std::string> errors;
  for (size_t i = 0; i < layers.size(); ++i) {
    for (const auto& d : layers[i].depends) {
      const int index = IndexOf(layers, Head(d));
      if (index < 0 || index >= static_cast<int>(i))
        errors.push_back(layers[i].name + " depends on " + d +
                         ", which is not a row above it");
    }
  }
  for (const auto& e : fs::directory_iterator(lib)) {
    if (e.is_directory() && IndexOf(layers, e.path().filename().string()) < 0)
      errors.push_back("lib/" + e.path().filename().string() +
                       " is no row of the table");
  }
  std::sort(errors.begin(), errors.end());
  return errors;
}

// "lib/<file>: #include \"<path>\"" for each include of a file under `lib`
// that its layer's row does not allow.
std::vector<std::string> IncludesAgainstTheTable(
    const fs::path& lib, const std::vector<Layer>& layers) {
  std::vector<std::string> bad;
  for (const auto& layer : layers) {
    if (!fs::exists(lib / layer.name))
      continue;
    for (const auto& file : Sources(lib / layer.name)) {
      for (const auto& path : Includes(ReadText(file))) {
        if (IndexOf(layers, Head(path)) >= 0 &&
            !MayUse(layer, Head(path, true)))
          bad.push_back(fs::relative(file, lib.parent_path()).string() +
                        ": #include \"" + path + "\"");
      }
    }
  }
  return bad;
}

// A library of lib/: its name less "pstrain_", the layer (or "ps/<part>")
// whose folder holds its CMakeLists.txt, and what it links ("pstrain_"
// names only, less the prefix).
struct Library {
  std::string folder;
  std::vector<std::string> links;
};

std::map<std::string, Library> Libraries(const fs::path& lib) {
  static const std::regex add(R"re(add_library\(\s*pstrain_(\w+))re");
  static const std::regex link(
      R"re(target_link_libraries\(\s*pstrain_(\w+)([^)]*)\))re");
  static const std::regex name(R"re(\bpstrain_(\w+))re");
  std::map<std::string, Library> libraries;
  for (const auto& e : fs::recursive_directory_iterator(lib)) {
    if (e.path().filename() != "CMakeLists.txt")
      continue;
    const std::string cmake = ReadText(e.path());
    const std::string folder =
        fs::relative(e.path().parent_path(), lib).string();
    for (std::sregex_iterator it(cmake.begin(), cmake.end(), add), end;
         it != end; ++it)
      libraries[(*it)[1]].folder = folder;
    for (std::sregex_iterator it(cmake.begin(), cmake.end(), link), end;
         it != end; ++it) {
      const std::string args = (*it)[2];
      for (std::sregex_iterator n(args.begin(), args.end(), name), nend;
           n != nend; ++n)
        libraries[(*it)[1]].links.push_back((*n)[1]);
    }
  }
  return libraries;
}

// The library whose headers an include's `path` names: "net" for a header
// of lib/net, "job" for one of lib/ps/job.
std::string LibraryOf(const std::string& path) {
  const std::string head = Head(path);
  return head == "ps" ? Head(path.substr(3)) : head;
}

// Every library `name` links, itself or through what it links.
std::set<std::string> Reach(const std::map<std::string, Library>& libraries,
                            const std::string& name) {
  std::set<std::string> seen;
  std::vector<std::string> todo = {name};
  while (!todo.empty()) {
    const std::string next = todo.back();
    todo.pop_back();
    const auto it = libraries.find(next);
    if (it == libraries.end())
      continue;
    for (const auto& l : it->second.links) {
      if (seen.insert(l).second)
        todo.push_back(l);
    }
  }
  return seen;
}

// For each library of `lib`, each library it links that its layer's row
// does not allow, and each library of lib/ whose headers its sources
// include that it does not reach by its links.
std::vector<std::string> LinksAgainstTheTable(
    const fs::path& lib, const std::vector<Layer>& layers) {
  const auto libraries = Libraries(lib);
  std::vector<std::string> bad;
  for (const auto& [name, library] : libraries) {
    const int index = IndexOf(layers, Head(library.folder));
    if (index < 0)
      continue;  // TableErrors names the folder.
    const Layer& layer = layers[index];
    for (const auto& l : library.links) {
      const auto it = libraries.find(l);
      if (it != libraries.end() && !MayUse(layer, it->second.folder))
        bad.push_back("pstrain_" + name + " links pstrain_" + l);
    }
    const auto reach = Reach(libraries, name);
    std::set<std::string> unlinked;
    for (const auto& file : Sources(lib / library.folder)) {
      for (const auto& path : Includes(ReadText(file))) {
        const std::string used = LibraryOf(path);
        if (used != name && libraries.count(used) > 0 && reach.count(used) == 0)
          unlinked.insert(used);
      }
    }
    for (const auto& u : unlinked)
      bad.push_back("pstrain_" + name + " includes " + u +
                    "'s headers but does not link pstrain_" + u);
  }
  return bad;
}

std::string Lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines)
    text += l + "\n";
  return text;
}

const std::vector<Layer> kTable =
    LayersTable(ReadText(kSource / "share/doc/design.md"));

TEST(LibLayersTest, TheTableHasEveryLayerEachBelowWhatItDependsOn) {
  ASSERT_GE(kTable.size(), 13u);
  EXPECT_EQ(kTable.front().name, "util");
  EXPECT_TRUE(kTable.front().depends.empty());
  const auto errors = TableErrors(kSource / "lib", kTable);
  EXPECT_TRUE(errors.empty()) << Lines(errors);
}

TEST(LibLayersTest, EachLayerIncludesOnlyWhatItsRowNames) {
  const auto bad = IncludesAgainstTheTable(kSource / "lib", kTable);
  EXPECT_TRUE(bad.empty()) << bad.size() << " includes against design.md's "
                           << "Layers table:\n"
                           << Lines(bad);
}

TEST(LibLayersTest, EachLibraryLinksWhatItIncludesAndNothingElse) {
  const auto bad = LinksAgainstTheTable(kSource / "lib", kTable);
  EXPECT_TRUE(bad.empty()) << Lines(bad);
  // The libraries were found: the worker's links are read.
  const auto libraries = Libraries(kSource / "lib");
  ASSERT_EQ(libraries.count("worker"), 1u);
  EXPECT_EQ(libraries.at("worker").folder, "worker");
  EXPECT_GT(Reach(libraries, "worker").count("util"), 0u);
}

// A made-up lib/ for the table of ABackwardIncludeOrLinkIsNamed: low,
// then ps (whose part job high may use), then high; low includes and links
// high, and high includes low without linking it.
void WriteMadeUpLayers(const fs::path& lib) {
  for (const char* dir : {"low", "high", "ps/job", "stray"})
    fs::create_directories(lib / dir);
  // The includes name .hh headers, and the expected lines below split
  // their paths, so that CitedDocsTest, which reads this file too, takes
  // none of them for a cited file.
  std::ofstream(lib / "low" / "a.h") << "#include \"low/b.hh\"\n"
                                     << "#include \"high/c.hh\"\n";
  std::ofstream(lib / "high" / "c.cc") << "#include \"low/a.hh\"\n"
                                       << "#include \"ps/job/j.hh\"\n"
                                       << "#include \"ps/rank/r.hh\"\n"
                                       << "#include <vector>\n";
  std::ofstream(lib / "low/CMakeLists.txt")
      << "add_library(pstrain_low STATIC a.cc)\n"
      << "target_link_libraries(pstrain_low PUBLIC pstrain_high torch_lib)\n";
  std::ofstream(lib / "high/CMakeLists.txt")
      << "add_library(pstrain_high STATIC c.cc)\n"
      << "target_link_libraries(pstrain_high\n  PUBLIC pstrain_job)\n";
  std::ofstream(lib / "ps/job/CMakeLists.txt")
      << "add_library(pstrain_job STATIC j.cc)\n";
}

// The checks can fail: on a made-up tree of two layers, a backward
// include, a backward link, an include of a layer not linked and a folder
// the table leaves out are each named.
TEST(LibLayersTest, ABackwardIncludeOrLinkIsNamed) {
  const fs::path root = fs::temp_directory_path() /
                        ("lib_layers_test_" + std::to_string(::getpid()));
  const fs::path lib = root / "lib";
  const auto table = LayersTable(
      "# x\n\n## Layers\n\n| layer | holds | depends on |\n|---|---|---|\n"
      "| `lib/low` | a | the standard library |\n"
      "| `lib/ps` | b | `low` |\n"
      "| `lib/high` | c | `low`, `ps/job` |\n\n## Next\n"
      "| `lib/after` | d | `high` |\n");
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[2].depends, (std::set<std::string>{"low", "ps/job"}));
  WriteMadeUpLayers(lib);
  EXPECT_EQ(TableErrors(lib, table),
            (std::vector<std::string>{"lib/stray is no row of the table"}));
  EXPECT_EQ(IncludesAgainstTheTable(lib, table),
            (std::vector<std::string>{"lib/low/"
                                      "a.h: #include \"high/c.hh\"",
                                      "lib/high/"
                                      "c.cc: #include \"ps/rank/r.hh\""}));
  EXPECT_EQ(LinksAgainstTheTable(lib, table),
            (std::vector<std::string>{
                "pstrain_high includes low's headers but does not link "
                "pstrain_low",
                "pstrain_low links pstrain_high"}));
  fs::remove_all(root);
}

}  // namespace
}  // namespace pstrain::testing
