#include "ps/rank/server_resume.h"

#include "ps/rank/checkpoint_rotation.h"
#include "ps/store/checkpoint.h"
#include "ps/store/parameter_server.h"

namespace pstrain::ps {

Status ResumeServer(const std::string& path, const NamedTensors& params,
                    ParameterServer& server, int rank, int num_servers) {
  auto tensors = LoadCheckpointTensors(path);
  auto meta = LoadCheckpointMeta(path);
  Status s = tensors.ok() ? meta.status() : tensors.status();
  if (s.ok())
    s = LoadIntoParameters(*tensors, params, path);
  if (s.ok())
    s = LoadOptimizerState(path, server.optimizers(), rank, num_servers);
  if (s.ok() &&
      !(meta->contains("version") && (*meta)["version"].is_number_unsigned())) {
    s = InvalidArgument(CheckpointMetaPath(path) + " has no \"version\"");
  }
  if (!s.ok())
    return InvalidArgument("--resume: " + s.message());
  server.set_version((*meta)["version"].get<uint64_t>());
  return Status::Ok();
}

std::string ResolveResumePath(const std::string& resume,
                              const std::string& checkpoint, int keep,
                              report::EventLog* log) {
  if (resume != "auto")
    return resume;
  if (keep >= 1) {
    Status pruned = RemoveOldCheckpoints(checkpoint, keep);
    if (!pruned.ok())
      log->Info("--resume auto: " + pruned.message());
  }
  auto saved = CompleteCheckpoints(checkpoint);
  log->Info(saved.empty()
                ? "--resume auto: no complete checkpoint yet, starting afresh"
                : "--resume auto: " + saved.back().second);
  return saved.empty() ? "" : saved.back().second;
}

}  // namespace pstrain::ps
