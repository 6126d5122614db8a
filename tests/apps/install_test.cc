// `cmake --install` puts the binary, man pages, completions and examples in
// the usual places under a prefix, and the installed binary runs.

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

namespace fs = std::filesystem;
using data::testing::ScratchDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(InstallTest, InstallsIntoAPrefixAndTheInstalledBinaryRuns) {
  ScratchDir prefix;
  // PSTRAIN_BIN is <build>/bin/pstrain.
  const std::string build = fs::path(PstrainBin()).parent_path().parent_path();
  Process install(
      {"/usr/bin/cmake", "--install", build, "--prefix", prefix.path()});
  auto r = install.Wait(120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  const std::string bin = prefix.File("bin/pstrain");
  for (const std::string& file :
       {bin, prefix.File("share/man/man1/pstrain.1"),
        prefix.File("share/man/man1/pstrain-serve.1"),
        prefix.File("share/man/man1/pstrain-run.1"),
        prefix.File("share/bash-completion/completions/pstrain"),
        prefix.File("share/zsh/site-functions/_pstrain"),
        prefix.File("share/fish/vendor_completions.d/pstrain.fish"),
        prefix.File("share/doc/pstrain/examples/job.toml"),
        prefix.File("share/doc/pstrain/examples/pstrain.sbatch"),
        prefix.File("share/doc/pstrain/examples/pstrain-job.yaml")}) {
    EXPECT_TRUE(fs::is_regular_file(file)) << file;
  }
  // The test-only build stays in the build tree.
  EXPECT_FALSE(fs::exists(prefix.File("bin/pstrain_testing")));
  Process version({bin, "--version"});
  auto v = version.Wait(30);
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.out.rfind("pstrain 0.1.0 (protocol ", 0), 0u) << v.out;
  Process completions({bin, "completions", "bash"});
  auto c = completions.Wait(30);
  EXPECT_EQ(c.out,
            Slurp(prefix.File("share/bash-completion/completions/pstrain")));
  // The installed example config is one the installed binary reads.
  Process config({bin, "serve", "--config",
                  prefix.File("share/doc/pstrain/examples/job.toml"),
                  "--print_config"});
  auto p = config.Wait(30);
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("\nmodel=\"mlp\"\n"), std::string::npos) << p.out;
}

}  // namespace
}  // namespace pstrain::testing
