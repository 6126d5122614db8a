#pragma once
// UpdateRule: how one mode turns pushes into steps (DESIGN.md, "Update
// rules"), the part of the conversation that differs between modes:
//   streaming sync (StreamingSync): every piece of a push is added into the
//       step's sums as it arrives, and the last push closes the step;
//   buffered sync (BufferedSync, --backup_workers, --step_timeout): pushes
//       land whole in per-worker buffers, and a step closes with the first
//       num_workers - b of them or when its time is up;
//   async and ssp (AsyncUpdate): each push steps at once; ssp's replies
//       also wait for the staleness bound (ps/ssp_gate.h).
// The rules act on the ParameterServer, which keeps the state; the Engine
// asks the WriteFence before it lets a rule step. Not thread-safe.

#include <cstdint>
#include <memory>

#include "ps/job_spec.h"
#include "ps/parameter_server.h"
#include "util/result.h"

namespace pstrain::ps {

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;

  /// Where bytes [offset, offset + bytes) of worker `w`'s gradient for key
  /// `key` land as they are read (bytes <= ParameterServer::kPieceBytes).
  virtual char* PieceBuffer(int w, int key, uint64_t offset) = 0;
  /// That piece is in and finite (its bytes at PieceBuffer). Allocates
  /// nothing.
  virtual void AddPiece(int w, int key, uint64_t offset, uint64_t bytes) = 0;
  /// Worker `w`'s whole compressed record of float32 key `key` is in and
  /// valid (wire::Validate): `nbytes` bytes at `data`, in `codec`. It is
  /// decoded into where the rule sums or keeps the worker's gradient.
  /// Allocates nothing.
  virtual void AddRecord(int w, int key, wire::Codec codec,
                         const wire::CodecParams& params, const uint8_t* data,
                         uint64_t nbytes) = 0;
  /// Worker `w`'s rows of row-sparse key `key` are in
  /// (ParameterServer::RowsBuffer) and finite; called once per key and
  /// push, for an empty set of rows too.
  virtual void AddRows(int /*w*/, int /*key*/) {}
  /// Worker `w`'s push of gradients computed on `version` is complete;
  /// `refused`: one of its pieces held NaN or Inf, and it must not change
  /// the parameters. Returns whether a new version exists.
  virtual Result<bool> Push(int w, uint64_t version, bool refused) = 0;
  /// The version the reply to a push_pull of `version` waits for.
  virtual uint64_t ReplyVersion(uint64_t version) const = 0;
  /// Whether replies also wait for the SSP bound.
  virtual bool bounds_staleness() const { return false; }
  /// Whether steps wait for every member: finished and lost workers must
  /// leave the quorum, and a silent one (--dead_after) is lost.
  virtual bool has_quorum() const = 0;
  /// How long a step may wait after its first push, in seconds; 0: as long
  /// as it takes.
  virtual double step_timeout() const { return 0; }
};

/// The rule of `spec.mode` (and --backup_workers, --step_timeout) over
/// `server`, which must outlive it.
std::unique_ptr<UpdateRule> MakeUpdateRule(const JobSpec& spec,
                                           ParameterServer* server);

std::unique_ptr<UpdateRule> MakeStreamingSync(ParameterServer* server);
std::unique_ptr<UpdateRule> MakeBufferedSync(ParameterServer* server,
                                             double step_timeout);
std::unique_ptr<UpdateRule> MakeAsyncUpdate(ParameterServer* server, bool ssp);

}  // namespace pstrain::ps
