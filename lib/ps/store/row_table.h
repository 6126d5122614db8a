#pragma once
// RowTable: an embedding table whose rows exist once touched, for the
// click-through-rate models' tables of tens of millions of rows of which a
// batch touches a few thousand (share/doc/ctr.md). As Monolith's
// collisionless tables (Liu et al., 2022, "Monolith: Real Time
// Recommendation System With Collisionless Embedding Table", section 2.1),
// nothing is allocated up front: memory follows the IDs seen.
//
//   - A row starts from U(-init_bound, init_bound) drawn from (seed, table,
//     id) alone (splitmix64 as a counter-based generator; Steele et al.,
//     OOPSLA 2014), so it is the same whichever server makes it, in
//     whatever order the IDs come.
//   - Rows live in chunks of kChunkRows, found through an open-addressing
//     index of 4-byte slots (linear probing, at most 0.8 full) beside each
//     row's ID: 13 to 18 bytes a row beside the row's own.
//   - Apply updates the rows it names, lazily, as RowOptimizer does for a
//     dense table (ps/store/row_optimizer.h): sgd, or row-wise Adagrad, the
//     DLRM reference's and FBGEMM's usual one, which keeps one sum a row:
//       sum[r] += mean_j(g[r][j]^2); p[r] -= lr * g[r] / (sqrt(sum[r]) + eps)
//
// Not thread-safe: one caller at a time.

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

namespace pstrain::ps {

enum class RowUpdate : uint8_t { kSgd, kRowwiseAdagrad };

struct RowTableOptions {
  int64_t dim = 16;         ///< row width, >= 1
  double init_bound = 0.1;  ///< rows start in U(-b, b)
  uint64_t seed = 1;
  int table = 0;  ///< which of the model's tables: its rows' draws differ
  RowUpdate update = RowUpdate::kRowwiseAdagrad;
  double eps = 1e-8;  ///< row-wise Adagrad's
};

class RowTable {
 public:
  /// Rows a chunk holds.
  static constexpr int64_t kChunkRows = 16384;

  /// REQUIRES: options.dim >= 1 (throws std::invalid_argument).
  explicit RowTable(const RowTableOptions& options);
  ~RowTable();
  RowTable(const RowTable&) = delete;
  RowTable& operator=(const RowTable&) = delete;

  /// The rows `ids` (int64 [n], CPU, each >= 0, repeats allowed), as
  /// float32 [n, dim]; rows not there yet are made. Throws
  /// std::invalid_argument for a negative ID or another dtype.
  at::Tensor Gather(const at::Tensor& ids);
  /// Updates rows `ids` (int64 [n], CPU, unique, each >= 0) by `grads`
  /// (float32 [n, dim], CPU) at learning rate `lr`; rows not there yet are
  /// made first. Throws std::invalid_argument on a shape or dtype mismatch.
  void Apply(const at::Tensor& ids, const at::Tensor& grads, double lr);

  /// Rows made so far.
  int64_t rows() const { return static_cast<int64_t>(count_); }
  /// Bytes held: the rows' chunks, their sums, the IDs and the index.
  uint64_t bytes() const;
  /// Writes the row `id` starts from into out[0, dim); makes no row.
  void InitialRow(int64_t id, float* out) const;
  const RowTableOptions& options() const { return options_; }

 private:
  // The slot of row `id`, made when absent.
  uint32_t SlotOf(int64_t id);
  float* Row(uint32_t slot);
  float* Sum(uint32_t slot);
  int64_t& Id(uint32_t slot);
  void Grow();  // doubles the index

  RowTableOptions options_;
  uint32_t count_ = 0;           // rows made: slots [0, count_)
  std::vector<uint32_t> index_;  // open addressing; kEmpty or a slot
  // By chunk of kChunkRows slots: the rows, their IDs, and the row-wise
  // Adagrad sums.
  std::vector<std::unique_ptr<float[]>> chunks_;
  std::vector<std::unique_ptr<int64_t[]>> ids_;
  std::vector<std::unique_ptr<float[]>> sums_;
};

}  // namespace pstrain::ps
