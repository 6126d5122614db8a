#pragma once
// ReadPlan: where an incoming frame's data bytes go, as the Engine plans
// them from its header and meta (Engine::OnMeta) and the Service reads
// them (net::Connection).

#include <cstddef>
#include <vector>

#include "ps/engine/outbox.h"

namespace pstrain::ps {

struct ReadPlan {
  std::vector<MutableSpan> buffers;
  /// Read one buffer at a time and call Engine::OnPiece after each (the
  /// buffers may share memory).
  bool piece_by_piece = false;
  /// Raw pieces may be offered where they lie in a shared-memory ring
  /// (Engine::OnPieceAt), rather than copied into their buffers first.
  bool in_place = false;
  /// A push's: by descriptor (tensors, then rows), the index of its first
  /// buffer, for a tagged push (net::Connection::ReadTagged).
  std::vector<size_t> groups;
};

}  // namespace pstrain::ps
