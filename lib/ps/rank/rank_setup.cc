#include "ps/rank/rank_setup.h"

#include <torch/torch.h>

#include "models/model_state.h"
#include "ps/job/tensor_codec.h"
#include "trace/timeline.h"
#include "util/check.h"

namespace pstrain::ps {

models::NamedTensors NamedState(models::Model& model) {
  models::NamedTensors tensors;
  for (auto& s : models::ModelState(model))
    tensors.emplace_back(std::move(s.name), std::move(s.value));
  return tensors;
}

ServiceOptions ServiceOptionsFor(const ServerRankOptions& o,
                                 const std::string& host, int port) {
  ServiceOptions options;
  options.host = o.bind_addr.empty() ? host : o.bind_addr;
  options.port = port;
  options.engine.timeout = o.timeout;
  options.max_frame_bytes = o.max_frame_bytes;
  options.engine.auth_token = o.auth_token;
  options.timeline = o.timeline;
  return options;
}

nlohmann::json WithMetricsPort(const ServerRankOptions& o,
                               nlohmann::json fields) {
  if (o.metrics_port >= 0)
    fields["metrics_port"] = o.metrics_port;
  return fields;
}

void NameKeys(trace::Timeline* timeline, const ShardPlan& plan, int rank,
              const std::vector<wire::KeySpec>& model_keys) {
  if (timeline == nullptr)
    return;
  std::vector<std::string> names;
  for (int i : plan.by_server[rank]) {
    const Slice& s = plan.slices[i];
    names.push_back(model_keys[s.key].name);
    if (!s.whole) {
      names.back() += "[" + std::to_string(s.row_begin) + ":" +
                      std::to_string(s.row_end) + "]";
    }
  }
  timeline->SetKeyNames(std::move(names));
}

ShardPlan PlanOrDie(models::Model& model, const JobSpec& spec) {
  auto plan = PlanShardsOf(Fingerprint(model), spec);
  PS_CHECK(plan.ok()) << plan.status().message();  // the spec was validated
  return *plan;
}

}  // namespace pstrain::ps
