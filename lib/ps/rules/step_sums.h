#pragma once
// StepSums: a sync step's sums, one accumulator per key, into which each
// worker's pushed pieces are added as they arrive (streaming sync), so that
// memory does not grow with the number of workers. Every piece counts its
// addends; the one that completes it divides by their count, so no pass
// over the sums is left for the step's close, and a key whose pieces are
// all complete is final before the step closes (ps/rules/step_order.h). A
// worker lost mid-step leaves the pieces it added in their sums (each
// element is then the mean of the gradients that reached it).
// Not thread-safe: the server's io thread alone uses it.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/store/parameter_server.h"
#include "wire/compression.h"

namespace pstrain::ps {

class StepSums {
 public:
  /// Pushes arrive in pieces of this many bytes of a key (the last piece
  /// of a key may be shorter).
  static constexpr uint64_t kPieceBytes = ParameterServer::kPieceBytes;

  StepSums() = default;
  /// Zeroed sums shaped as `params` (float32, float64 or int64,
  /// contiguous), for `num_workers` workers.
  StepSums(const std::vector<at::Tensor>& params, int num_workers);

  bool empty() const { return sums_.empty(); }
  /// Key `key`'s sum: the mean of its addends once final.
  at::Tensor& sum(int key) { return sums_[key]; }
  const std::vector<at::Tensor>& sums() const { return sums_; }

  /// Adds worker `w`'s piece (elements of the key's dtype, bytes [offset,
  /// offset + bytes) of the key) and checks it for NaN and Inf in the same
  /// pass: each element at `data` is read once, so memory a peer shares
  /// and may write meanwhile is summed as it was checked. `data` needs no
  /// alignment. `needed`: the addends a piece waits for from the step's
  /// members; a lost worker's pieces count beside them. Returns false when
  /// an element was NaN or Inf: the piece then does not count as added,
  /// its sum holds garbage and the step must be discarded. Allocates
  /// nothing. REQUIRES: offset a multiple of kPieceBytes, bytes =
  /// min(kPieceBytes, rest of the key), not added by `w` yet.
  [[nodiscard]] bool Add(int w, int key, uint64_t offset, const void* data,
                         uint64_t bytes, int needed);
  /// As Add, for a whole compressed record of float32 key `key`
  /// (wire/compression.h, checked by wire::Validate), decoded straight
  /// into the sum: every piece of the key counts as added by `w`.
  void AddRecord(int w, int key, wire::Codec codec,
                 const wire::CodecParams& params, const uint8_t* data,
                 uint64_t nbytes, int needed);
  /// Worker `w`'s push of row-sparse key `key` has begun (its rows are
  /// summed by the caller).
  void NoteRows(int w, int key) { contributed_[w][base_[key]] = true; }

  /// Whether every piece of `key` has its `needed` addends and is divided.
  bool Final(int key, int needed) const;
  /// Worker `w` left the step before its push was complete; `needed` is
  /// the addends pieces now wait for (one fewer). Its pieces stay in
  /// their sums; those that only waited for it are divided now.
  void Remove(int w, int needed);
  /// The next step: no piece has an addend.
  void Clear();

 private:
  size_t Piece(int key, uint64_t offset) const {
    return base_[key] + offset / kPieceBytes;
  }

  std::vector<at::Tensor> sums_;
  std::vector<size_t> base_;        // key k's pieces are base_[k] onward
  std::vector<uint16_t> arrivals_;  // addends so far, per piece
  std::vector<uint16_t> extra_;     // of those, by lost workers
  std::vector<std::vector<bool>> contributed_;  // per worker, per piece
};

}  // namespace pstrain::ps
