#include "ps/job/job_rules.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "models/loss.h"
#include "models/model_zoo.h"
#include "util/sha256.h"

namespace pstrain::ps {

// --model (a built-in name or a TorchScript file), its hash and --loss.
Status CheckModelRules(const JobSpec& s) {
  PS_ASSIGN_OR_RETURN(const models::Loss loss, models::ParseLoss(s.loss));
  const bool built_in = models::IsZooModel(s.model);
  if (!s.model_sha256.empty() && (built_in || !IsSha256Hex(s.model_sha256))) {
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

namespace {

// A field that only means something beside another: set to other than
// its default while `met` is false, it is refused, naming what it needs.
struct FieldNeed {
  const char* field;
  const char* needs;
  bool (*met)(const JobSpec&);
};

bool IsSsp(const JobSpec& s) {
  return s.mode == Mode::kSsp;
}
bool IsText(const JobSpec& s) {
  return s.dataset == "text";
}
bool IsLstm(const JobSpec& s) {
  return s.model == "lstm_lm";
}
bool IsImageFolder(const JobSpec& s) {
  return s.dataset == "imagefolder";
}
bool ScalesPerChunk(const JobSpec& s) {
  return s.compression == "int8" || s.compression == "onebit";
}
bool FeedsErrorBack(const JobSpec& s) {
  return ScalesPerChunk(s) || s.compression.rfind("topk:", 0) == 0;
}
bool Prioritized(const JobSpec& s) {
  return s.priority;
}

const FieldNeed kFieldNeeds[] = {
    {"staleness", "--mode ssp", IsSsp},
    {"image_size", "--dataset imagefolder", IsImageFolder},
    {"vocab_size", "--dataset text", IsText},
    {"bptt", "--dataset text", IsText},
    {"target_perplexity", "--dataset text", IsText},
    {"embed_dim", "--model lstm_lm", IsLstm},
    {"hidden_dim", "--model lstm_lm", IsLstm},
    {"num_layers", "--model lstm_lm", IsLstm},
    {"dropout", "--model lstm_lm", IsLstm},
    {"tie_weights", "--model lstm_lm", IsLstm},
    {"compress_chunk", "--compression int8 or onebit", ScalesPerChunk},
    {"error_feedback", "--compression int8, topk or onebit", FeedsErrorBack},
    {"send_window", "--priority", Prioritized},
};

// Whether the field `name` of `s` holds other than the table's default.
bool SetOtherThanDefault(const JobSpec& s, const char* name) {
  static const JobSpec defaults;
  bool differs = false;
  ForEachJobField(s, [&](const JobField& f, const auto& v) {
    if (std::strcmp(f.name, name) != 0)
      return;
    ForEachJobField(defaults, [&](const JobField& d, const auto& dv) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, std::decay_t<decltype(dv)>>) {
        if (std::strcmp(d.name, name) == 0)
          differs = !(v == dv);
      }
    });
  });
  return differs;
}

}  // namespace

Status CheckFieldNeeds(const JobSpec& s) {
  for (const FieldNeed& n : kFieldNeeds) {
    if (!n.met(s) && SetOtherThanDefault(s, n.field)) {
      return InvalidArgument(std::string("--") + n.field + ": only with " +
                             n.needs);
    }
  }
  return Status::Ok();
}

bool IsServerPlacement(const JobSpec& spec) {
  return spec.placement == "server";
}

}  // namespace pstrain::ps
