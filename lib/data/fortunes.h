#pragma once
// The fortunes corpus: the text of Debian's `fortunes` package, the default
// text corpus (no download). Reads every plain file of the directory
// (default /usr/share/games/fortunes) in byte order of the names, leaving
// out the `.dat` indexes, the `.u8` names (symlinks to the same files, which
// would count every fortune twice) and any other symlink. A fortune is the
// text between lines holding only "%"; fortunes with no line are dropped.
// Each goes whole into one split, by the FNV-1a 64-bit hash of its bytes
// (its lines joined by "\n", no trailing newline): hash % 10 == 0 is
// validation, == 1 test, the rest (80%) training. A hash does not depend on
// which files there are or their order, so a fortune stays where it is when
// the package grows. Free functions; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pstrain::data {

/// Where Debian's fortunes package puts its files.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

/// The lines of each split, fortune after fortune.
struct FortuneSplits {
  std::vector<std::string> train, valid, test;
  int64_t fortunes = 0;  ///< fortunes read, all splits
};

/// FNV-1a, 64 bits (offset 0xcbf29ce484222325, prime 0x100000001b3).
uint64_t Fnv1a64(std::string_view bytes);

/// Reads `dir` as above. kNotFound "DIR not found; install Debian's
/// package fortunes or pass --data_dir" for a missing directory;
/// kInvalidArgument "DIR holds no fortunes" when there is none; kIOError
/// naming a file that cannot be read.
Result<FortuneSplits> ReadFortunes(const std::string& dir);

}  // namespace pstrain::data
