#pragma once
// The Succession of --rdzv_backend etcd: the master is whoever holds the
// job's key in etcd (rdzv/master_key.h). Rank 0 takes it at its start;
// the standby of rank 0's shard tries to take it once rank 0 is gone, and
// wins only once rank 0's lease lapsed, so never while rank 0 renews it;
// a master whose lease lapsed (it was stopped, or cut off) stops serving.

#include <memory>

#include "ps/rank/succession.h"

namespace pstrain::ps {

/// kInvalidArgument naming --rdzv_endpoint where it is empty.
Result<std::unique_ptr<Succession>> MakeEtcdSuccession(const RdzvOptions& rdzv);

}  // namespace pstrain::ps
