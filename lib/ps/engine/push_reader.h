#pragma once
// PushReader: how a worker's push is read into the update rule. Its
// descriptors are checked against this server's keys before a byte of it
// is read: every key once, each dense key as its dtype, shape and codec
// (KeyFormats), each row-sparse key as rows of its width with ids in its
// table's range, each row request once (share/doc/wire-format.md). Then
// it is read a piece at a time into where the rule wants it
// (UpdateRule::PieceBuffer; a compressed record whole into the peer's
// record buffer; a key's rows into ParameterServer::RowsBuffer), and each
// piece is checked for NaN and Inf while it is still in cache, before it is
// added: a sum cannot be taken apart. A refused piece marks the push
// refused (WorkerPeer::refused_key); with keys updated ahead of the close,
// the step is discarded from that piece on.
//
// Threading: not thread-safe; the Engine's thread only. `*store`, `*rule`
// and `*formats` must outlive it.

#include <cstddef>
#include <string>
#include <vector>

#include "ps/engine/key_formats.h"
#include "ps/engine/read_plan.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"
#include "util/status.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct WorkerPeer;

class PushReader {
 public:
  PushReader(ParameterServer* store, UpdateRule* rule,
             const KeyFormats* formats);
  PushReader(const PushReader&) = delete;
  PushReader& operator=(const PushReader&) = delete;

  /// A push's dense descriptors `grads`, its `rows` and the row `requests`
  /// of its reply, against this server's keys (the wire checked each on
  /// its own). kCorruption naming `what` ("push_pull") and the first
  /// descriptor that does not fit. Allocates nothing for a push without
  /// row requests once the first has been checked.
  Status Check(const std::vector<wire::TensorDesc>& grads,
               const std::vector<wire::SparseRows>& rows,
               const std::vector<wire::RowRequest>& requests, const char* what);
  /// Where `peer`'s checked push lands: appends to `*plan` a group per
  /// descriptor (dense keys, then rows) with a buffer per piece of
  /// ParameterServer::kPieceBytes, and records each in peer.pieces
  /// (cleared first). A key with no rows is handed to the rule at once.
  void Plan(WorkerPeer& peer, const std::vector<wire::TensorDesc>& grads,
            const std::vector<wire::SparseRows>& rows, ReadPlan* plan);
  /// Piece `index` of `peer`'s plan is in: it goes to the rule, or refuses
  /// the push. Returns the dense key it completed or added to (a raw
  /// piece, or a whole record), which may now be updated ahead; -1 for a
  /// refused piece, a record not yet whole, and rows. REQUIRES: the push is
  /// not refused yet.
  int Read(WorkerPeer& peer, size_t index);
  /// Whether piece `index` of `peer`'s plan may be read where it lies
  /// (ReadAt): a raw dense piece, for a rule that adds pieces in place.
  bool ReadsAt(const WorkerPeer& peer, size_t index) const;
  /// As Read, with the piece's bytes at `data`: memory the peer shares, at
  /// any alignment, of which each element is read once, checked for NaN
  /// and Inf in the pass that sums it (UpdateRule::AddPieceAt), so that
  /// bytes the peer writes meanwhile are summed only as they were checked.
  /// REQUIRES: ReadsAt(peer, index).
  int ReadAt(WorkerPeer& peer, size_t index, const char* data);
  /// --placement server: a batch's gradients for `peer` (`keys`, by key,
  /// as a push carries them) go into the rule piece by piece, as a push's
  /// would. A non-finite piece refuses the push (WorkerPeer::refused_key),
  /// and the step goes on without it.
  void AddBatch(WorkerPeer& peer, const std::vector<at::Tensor>& keys);

 private:
  Status CheckRows(const std::vector<wire::SparseRows>& rows, const char* what);
  Status CheckRequests(const std::vector<wire::RowRequest>& requests,
                       const char* what);
  Status CheckRowIds(const std::vector<int64_t>& ids, uint32_t key,
                     const std::string& record) const;
  void PlanRecord(WorkerPeer& peer, const wire::TensorDesc& desc,
                  ReadPlan* plan);
  int ReadRecord(WorkerPeer& peer, int key, uint64_t nbytes);
  int AddRaw(WorkerPeer& peer, size_t index, const char* data);
  void ReadRows(WorkerPeer& peer, size_t index);
  // The push is refused from this piece on (WorkerPeer::refused_key).
  void Refuse(WorkerPeer& peer, int key, std::string why);

  ParameterServer* store_;
  UpdateRule* rule_;
  const KeyFormats* formats_;
  std::vector<bool> seen_;  // by key: this push names it; kept to reuse
};

}  // namespace pstrain::ps
