#pragma once
// Reader of IDX files, the format of MNIST and Fashion-MNIST
// (http://yann.lecun.com/exdb/mnist/): a big-endian u32 magic 0x000008NN
// (unsigned bytes, NN dims), NN big-endian u32 dims, then the dims' product
// of bytes. Plain and gzip-compressed files are read alike. Stateless;
// thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include <torch/types.h>

#include "util/result.h"

namespace pstrain::data {

/// What an IDX file holds, which fixes its magic number and rank.
enum class IdxKind {
  kImages,  ///< magic 0x00000803: uint8 [N, rows, cols]
  kLabels,  ///< magic 0x00000801: uint8 [N]
};

/// Largest file, after decompression, that ReadIdxFile accepts: 4 GiB.
inline constexpr uint64_t kMaxIdxFileBytes = uint64_t{4} << 30;

/// Reads the IDX file at `path`, plain or gzip (zlib tells them apart).
/// Returns uint8 [N, rows, cols] (kImages) or uint8 [N] (kLabels), CPU,
/// contiguous. Errors: kNotFound "<path>: no such file"; kIOError when it
/// cannot be opened or read; kCorruption naming `path` and the bad field
/// (magic number, header, data size) as ParseIdx does, or when it is larger
/// than kMaxIdxFileBytes.
Result<torch::Tensor> ReadIdxFile(const std::string& path, IdxKind kind);

/// Parses the uncompressed bytes of an IDX file; does no I/O. `path` only
/// names the file in errors. Returns what ReadIdxFile returns, or
/// kCorruption "<path>: <field> ..." when the magic number is not that of
/// `kind`, the header is short, or the data is not exactly the dims' product
/// of bytes.
Result<torch::Tensor> ParseIdx(const std::string& path, std::string_view bytes,
                               IdxKind kind);

}  // namespace pstrain::data
