#pragma once
// ScratchDir: a fresh directory under a parent, removed with everything in
// it on destruction: where a bench keeps what its runs write. Not
// thread-safe.

#include <memory>
#include <string>

#include "util/result.h"

namespace pstrain::bench {

class ScratchDir {
 public:
  /// A new directory "<parent>/pstrain-bench-XXXXXX" (mkdtemp).
  /// kIOError when it cannot be made.
  static Result<std::unique_ptr<ScratchDir>> Make(const std::string& parent);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace pstrain::bench
