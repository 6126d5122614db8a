#include "bench/scratch_dir.h"

#include <stdlib.h>

#include <filesystem>
#include <system_error>

namespace pstrain::bench {

Result<std::unique_ptr<ScratchDir>> ScratchDir::Make(
    const std::string& parent) {
  std::string pattern = parent + "/pstrain-bench-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr)
    return IOError("cannot make a directory under " + parent);
  return std::unique_ptr<ScratchDir>(new ScratchDir(pattern));
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace pstrain::bench
