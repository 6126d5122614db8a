#pragma once
// PushOrder: the order a PsClient's pushes list its dense gradients in, and
// the gate mark (net/send_gate.h) each waits for. Gradients computed first
// go first: the push lists them by ascending mark, so that none waits
// behind one backward has not made yet. Under --priority a gated push
// without row-sparse keys is tagged instead (wire::kFrameTagged) and lists
// them in key order, the order the next forward needs them, each going out
// as soon as its own mark opens (P3: Jayarajan et al., SysML 2019). Row-
// sparse keys travel as rows after the dense ones and are left out.
// Not thread-safe: PsClient changes it between calls only.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pstrain::worker {

class PushOrder {
 public:
  /// `keys` attached tensors, each with mark 0 and none row-sparse; the
  /// order is empty until Plan.
  void Reset(size_t keys);
  /// The marks of the attached tensors, by key: cut or padded with 0 to
  /// the number Reset gave.
  void SetMarks(std::vector<uint32_t> marks);
  /// --priority; false (the default): pushes are never tagged.
  void set_priority(bool priority) { priority_ = priority; }
  /// No key is row-sparse.
  void ClearRowKeys();
  /// Attached tensor `key` travels as rows. REQUIRES: key < the number
  /// Reset gave (else std::out_of_range).
  void AddRowKey(uint32_t key);

  /// Whether a push is tagged: --priority, the push is `gated`, and it
  /// carries no rows (`rows`: the client has row-sparse slots).
  bool Tags(bool gated, bool rows) const { return priority_ && gated && !rows; }
  /// Works out order() for pushes as Tags(gated, rows) says.
  void Plan(bool gated, bool rows);

  /// The dense keys in send order, as of the last Plan.
  const std::vector<uint32_t>& order() const { return order_; }
  /// Attached tensor `key`'s mark. REQUIRES: key < the number Reset gave.
  uint32_t mark(uint32_t key) const { return marks_[key]; }

 private:
  bool priority_ = false;
  std::vector<uint32_t> marks_;  // by key
  std::vector<bool> row_keys_;   // by key: travels as rows
  std::vector<uint32_t> order_;  // dense keys, in send order
};

}  // namespace pstrain::worker
