#include "ps/job/job_rules.h"

#include <algorithm>
#include <string>

#include "models/loss.h"
#include "models/model_zoo.h"
#include "net/sha256.h"

namespace pstrain::ps {

// --model (a built-in name or a TorchScript file), its hash and --loss.
Status CheckModelRules(const JobSpec& s) {
  PS_ASSIGN_OR_RETURN(const models::Loss loss, models::ParseLoss(s.loss));
  const bool built_in = models::IsZooModel(s.model);
  if (!s.model_sha256.empty() &&
      (built_in || !net::IsSha256Hex(s.model_sha256))) {
    return InvalidArgument("model_sha256 '" + s.model_sha256 +
                           "': expected 64 hex digits, and only with --model "
                           "PATH");
  }
  if (built_in && loss == models::Loss::kMse) {
    return InvalidArgument("--loss mse: the built-in model " + s.model +
                           " is a classifier (log_softmax, trained with nll); "
                           "--loss applies to --model PATH");
  }
  if (loss == models::Loss::kMse && s.target_accuracy > 0) {
    return InvalidArgument(
        "--target_accuracy: not with --loss mse (a regression has no "
        "accuracy)");
  }
  return Status::Ok();
}

// --placement server: what the model on the server works with, and what
// it refuses (share/doc/design.md: "Placement").
Status CheckPlacementRules(const JobSpec& s) {
  if (s.placement != "worker" && s.placement != "server") {
    return InvalidArgument("--placement '" + s.placement +
                           "': expected worker or server");
  }
  if (s.placement == "worker")
    return Status::Ok();
  const std::string flag = "--placement server: ";
  if (s.num_servers > 1)
    return InvalidArgument(flag + "the model lives on one server, not " +
                           std::to_string(s.num_servers));
  if (s.dataset == "text")
    return InvalidArgument(flag + "not with --dataset text");
  if (s.compression != "none" || s.pull_compression != "none") {
    return InvalidArgument(flag +
                           "workers send batches, not gradients or "
                           "parameters: --compression and --pull_compression "
                           "do not apply");
  }
  if (s.backup_workers > 0 || s.step_timeout > 0 || s.reassign_shards) {
    return InvalidArgument(
        flag +
        "not with --backup_workers, --step_timeout or --reassign_shards");
  }
  return Status::Ok();
}

Status CheckReplicaRules(const JobSpec& s) {
  if (s.replicas < 1 || s.replicas > std::max(1, s.num_servers)) {
    return InvalidArgument("--replicas " + std::to_string(s.replicas) +
                           ": expected 1.." +
                           std::to_string(std::max(1, s.num_servers)) +
                           " (at most --num_servers copies of a shard)");
  }
  return Status::Ok();
}

bool IsServerPlacement(const JobSpec& spec) {
  return spec.placement == "server";
}

}  // namespace pstrain::ps
