// lib/ps is six parts whose dependencies run one way: job -> store -> rules
// -> engine -> service -> rank (share/doc/design.md, "The Engine's parts").
// A file includes only headers of its own part or of parts before it, each
// part's library links only the libraries of parts before it, and the
// worker sees only the job.

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::ps {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kParts = {"job",    "store",   "rules",
                                         "engine", "service", "rank"};

int PartIndex(const std::string& part) {
  auto it = std::find(kParts.begin(), kParts.end(), part);
  return it == kParts.end() ? -1 : static_cast<int>(it - kParts.begin());
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The part of every `#include "ps/..."` in `text`: "job" for
// "ps/job/job_spec.h", "" for a header directly under ps/.
std::vector<std::string> IncludedParts(const std::string& text) {
  static const std::regex include(R"re(#include "ps/([^"]*)")re");
  std::vector<std::string> parts;
  for (std::sregex_iterator it(text.begin(), text.end(), include), end;
       it != end; ++it) {
    const std::string path = (*it)[1];
    const auto slash = path.find('/');
    parts.push_back(slash == std::string::npos ? "" : path.substr(0, slash));
  }
  return parts;
}

// Each file under `dir` (recursively) whose includes of lib/ps reach past
// part `highest`, as "file: includes ps/<part>".
std::vector<std::string> IncludesAbove(const fs::path& dir, int highest) {
  std::vector<std::string> bad;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".h" && ext != ".cc" && ext != ".inc"))
      continue;
    for (const auto& part : IncludedParts(ReadFile(e.path()))) {
      const int index = PartIndex(part);
      if (index < 0 || index > highest)
        bad.push_back(e.path().string() + ": includes ps/" + part);
    }
  }
  std::sort(bad.begin(), bad.end());
  return bad;
}

// The libraries `cmake` (a CMakeLists.txt's text) links its target to.
std::vector<std::string> LinkedPsLibraries(const std::string& cmake) {
  static const std::regex link(R"re(target_link_libraries\(\S+([^)]*)\))re");
  static const std::regex lib(R"re(pstrain_(\w+))re");
  std::vector<std::string> libs;
  for (std::sregex_iterator it(cmake.begin(), cmake.end(), link), end;
       it != end; ++it) {
    const std::string args = (*it)[1];
    for (std::sregex_iterator l(args.begin(), args.end(), lib), lend; l != lend;
         ++l)
      libs.push_back((*l)[1]);
  }
  return libs;
}

const fs::path kPs = fs::path(PSTRAIN_SOURCE_DIR) / "lib" / "ps";

TEST(LayersTest, EachPartIncludesOnlyItselfAndThePartsBeforeIt) {
  for (size_t i = 0; i < kParts.size(); ++i) {
    SCOPED_TRACE(kParts[i]);
    EXPECT_EQ(IncludesAbove(kPs / kParts[i], static_cast<int>(i)),
              std::vector<std::string>{});
  }
}

TEST(LayersTest, EveryFileOfLibPsSitsInAPart) {
  for (const auto& e : fs::directory_iterator(kPs)) {
    if (e.is_directory())
      EXPECT_GE(PartIndex(e.path().filename().string()), 0) << e.path();
    else
      EXPECT_EQ(e.path().filename(), "CMakeLists.txt") << e.path();
  }
}

TEST(LayersTest, EachPartsLibraryLinksOnlyThePartsBeforeIt) {
  for (size_t i = 0; i < kParts.size(); ++i) {
    SCOPED_TRACE(kParts[i]);
    const auto libs =
        LinkedPsLibraries(ReadFile(kPs / kParts[i] / "CMakeLists.txt"));
    for (const auto& lib : libs) {
      const int index = PartIndex(lib);
      if (index >= 0) {
        EXPECT_LT(index, static_cast<int>(i)) << "links pstrain_" << lib;
      }
    }
  }
}

TEST(LayersTest, TheWorkerSeesOnlyTheJob) {
  const fs::path worker = fs::path(PSTRAIN_SOURCE_DIR) / "lib" / "worker";
  EXPECT_EQ(IncludesAbove(worker, PartIndex("job")),
            std::vector<std::string>{});
  const auto libs = LinkedPsLibraries(ReadFile(worker / "CMakeLists.txt"));
  for (const auto& lib : libs)
    EXPECT_LE(PartIndex(lib), PartIndex("job")) << "links pstrain_" << lib;
  EXPECT_NE(std::find(libs.begin(), libs.end(), "job"), libs.end());
}

// The checks can fail: an include that runs against the order, or a header
// left directly under ps/, is named.
TEST(LayersTest, AnIncludeAgainstTheOrderIsNamed) {
  const fs::path dir =
      fs::temp_directory_path() / ("layers_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.h") << "#include \"ps/job/job_spec.h\"\n"
                             << "#include \"ps/engine/engine.h\"\n";
  // A header directly under ps/, which no part holds.
  std::ofstream(dir / "b.cc") << "#include \"ps/"
                                 "top.h\"\n";
  EXPECT_EQ(
      IncludesAbove(dir, PartIndex("rules")),
      (std::vector<std::string>{(dir / "a.h").string() + ": includes ps/engine",
                                (dir / "b.cc").string() + ": includes ps/"}));
  EXPECT_EQ(IncludesAbove(dir, PartIndex("rank")).size(), 1u);
  fs::remove_all(dir);
  EXPECT_EQ(LinkedPsLibraries("target_link_libraries(pstrain_store PUBLIC "
                              "pstrain_job torch_lib)"),
            (std::vector<std::string>{"job"}));
}

}  // namespace
}  // namespace pstrain::ps
