// The shell completions and man pages are generated from the binary's own
// flags: the committed files equal what it generates now, name every flag
// `--help` lists for every subcommand, and pass their tools' syntax checks.

#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(PSTRAIN_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << relative;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Names in the "Subcommands:" section of a --help text.
std::vector<std::string> Subcommands(const std::string& help) {
  std::vector<std::string> names;
  const size_t at = help.find("Subcommands:");
  if (at == std::string::npos)
    return names;
  std::istringstream in(help.substr(at));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && !line.empty()) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (!name.empty())
      names.push_back(name);
  }
  return names;
}

// Every "--flag" token of a --help text (hidden flags are not shown there).
std::set<std::string> HelpFlags(const std::string& help) {
  std::set<std::string> flags;
  static const std::regex kFlag(R"((^|[\s,])(--[a-z][a-z0-9_]*))");
  const std::string options = help.substr(0, help.find("Subcommands:"));
  for (std::sregex_iterator it(options.begin(), options.end(), kFlag), end;
       it != end; ++it) {
    flags.insert((*it)[2]);
  }
  return flags;
}

// Every command path ({"serve"}, {"bench", "wire"}, ...) with its --help flags.
void CollectFlags(
    const std::vector<std::string>& path,
    std::map<std::vector<std::string>, std::set<std::string>>* out) {
  std::vector<std::string> args = path;
  args.push_back("--help");
  auto r = RunPstrain(args, 30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  (*out)[path] = HelpFlags(r.out);
  for (const std::string& sub : Subcommands(r.out)) {
    std::vector<std::string> child = path;
    child.push_back(sub);
    CollectFlags(child, out);
  }
}

std::map<std::vector<std::string>, std::set<std::string>> AllFlags() {
  std::map<std::vector<std::string>, std::set<std::string>> flags;
  CollectFlags({}, &flags);
  return flags;
}

// {"completions", "bash"} -> stdout, which must succeed.
std::string Generate(const std::vector<std::string>& args) {
  auto r = RunPstrain(args, 30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

const std::vector<std::pair<std::string, std::string>> kCompletionFiles = {
    {"bash", "completions/pstrain.bash"},
    {"zsh", "completions/_pstrain"},
    {"fish", "completions/pstrain.fish"}};

TEST(CliDocsTest, CommittedCompletionsAreWhatTheBinaryGenerates) {
  for (const auto& [shell, file] : kCompletionFiles) {
    EXPECT_EQ(ReadSource(file), Generate({"completions", shell}))
        << file << " is stale: run share/scripts/regenerate-docs.sh";
  }
}

TEST(CliDocsTest, CommittedManPagesAreWhatTheBinaryGenerates) {
  auto help = RunPstrain({"--help"}, 30);
  EXPECT_EQ(ReadSource("man/pstrain.1"), Generate({"man"}));
  for (const std::string& sub : Subcommands(help.out)) {
    EXPECT_EQ(ReadSource("man/pstrain-" + sub + ".1"), Generate({"man", sub}))
        << "man/pstrain-" << sub
        << ".1 is stale: run share/scripts/regenerate-docs.sh";
  }
}

TEST(CliDocsTest, EveryFlagOfEverySubcommandIsCompletedAndDocumented) {
  const auto flags = AllFlags();
  ASSERT_GT(flags.size(), 8u);
  ASSERT_TRUE(flags.at({"serve"}).count("--master_port"));  // the oracle works
  const std::string bash = ReadSource("completions/pstrain.bash");
  const std::string zsh = ReadSource("completions/_pstrain");
  const std::string fish = ReadSource("completions/pstrain.fish");
  for (const auto& [path, names] : flags) {
    const std::string page =
        path.empty() ? "man/pstrain.1" : "man/pstrain-" + path.front() + ".1";
    const std::string man = ReadSource(page);
    for (const std::string& flag : names) {
      const std::string where =
          flag + " of pstrain" + (path.empty() ? "" : " " + path.back());
      EXPECT_NE(bash.find(" " + flag), std::string::npos) << where;
      EXPECT_NE(zsh.find("'" + flag + ":"), std::string::npos) << where;
      EXPECT_NE(fish.find(" -l " + flag.substr(2)), std::string::npos) << where;
      std::string roff = std::regex_replace(flag, std::regex("-"), "\\-");
      EXPECT_NE(man.find("\\fB" + roff + "\\fR"), std::string::npos)
          << where << " in " << page;
    }
  }
}

TEST(CliDocsTest, ShellsAcceptTheCompletionFiles) {
  for (const auto& [shell, file] : kCompletionFiles) {
    const std::string path = std::string(PSTRAIN_SOURCE_DIR) + "/" + file;
    Process check({"/usr/bin/" + shell, "-n", path});
    auto r = check.Wait(30);
    EXPECT_EQ(r.exit_code, 0) << shell << " -n " << file << ": " << r.err;
  }
}

TEST(CliDocsTest, ManPagesRenderWithoutWarnings) {
  ScratchDir dir;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::string(PSTRAIN_SOURCE_DIR) + "/man")) {
    const std::string page = entry.path().string();
    Process lint({"/usr/bin/mandoc", "-T", "lint", "-W", "warning", page});
    auto l = lint.Wait(30);
    EXPECT_EQ(l.exit_code, 0) << page << ":\n" << l.out << l.err;
    EXPECT_EQ(l.out, "") << page;
    Process groff({"/usr/bin/groff", "-ww", "-man", "-Tutf8", "-z", page});
    auto g = groff.Wait(30);
    EXPECT_EQ(g.exit_code, 0) << page;
    EXPECT_EQ(g.err, "") << page;
  }
}

TEST(CliDocsTest, UnknownShellOrSubcommandIsBadUsage) {
  auto r = RunPstrain({"completions", "tcsh"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "pstrain: error: completions: shell 'tcsh': expected bash, zsh or "
            "fish\n");
  r = RunPstrain({"man", "nosuch"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "pstrain: error: man: no subcommand 'nosuch'\n");
}

}  // namespace
}  // namespace pstrain::testing
