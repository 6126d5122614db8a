#include "ps/engine/progress_feed.h"

namespace pstrain::ps {

Status ProgressFeed::Heartbeat(int rank, std::string_view meta) {
  if (!receiver_)
    return Status::Ok();
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &heartbeat_));
  if (!heartbeat_.json.empty())
    receiver_(rank, heartbeat_.json);
  return Status::Ok();
}

}  // namespace pstrain::ps
