#pragma once
// Where a server rank's run resumes from (--resume): a checkpoint's
// parameters, optimizer state and version put back into a
// ParameterServer, and the checkpoint --resume auto picks.

#include <string>

#include "ps/store/checkpoint.h"
#include "ps/store/parameter_server.h"
#include "report/event_log.h"
#include "util/status.h"

namespace pstrain::ps {

/// Loads checkpoint `path` (ps/store/checkpoint.h) into `params` (the whole
/// model's parameters and buffers, by name; every server of several reads
/// the merged parameters, its slices being views of them), server `rank`'s
/// optimizer state of `num_servers`, and the server's version. Any
/// mismatch with this run's model or optimizer is kInvalidArgument
/// ("--resume: ...").
Status ResumeServer(const std::string& path, const NamedTensors& params,
                    ParameterServer& server, int rank, int num_servers);

/// `resume` itself, unless it is "auto": then the newest complete periodic
/// checkpoint beside `checkpoint`, or "" when there is none (logged).
/// Those beyond `keep` go first: a run killed between a save and its
/// pruning left one more, and runs killed so again and again would pile
/// them up.
std::string ResolveResumePath(const std::string& resume,
                              const std::string& checkpoint, int keep,
                              report::EventLog* log);

}  // namespace pstrain::ps
