#include "ps/store/snapshot.h"

#include <ATen/ATen.h>

#include "ps/store/checkpoint.h"
#include "ps/store/parameter_server.h"

namespace pstrain::ps {

Result<std::shared_ptr<const Snapshot>> TakeSnapshot(
    const ParameterServer& server, std::vector<int64_t> applied,
    bool with_optimizer_state, std::chrono::steady_clock::time_point now) {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->version = server.version();
  snapshot->made_at = now;
  snapshot->applied = std::move(applied);
  snapshot->params.reserve(server.params().size());
  for (const at::Tensor& p : server.params()) {
    snapshot->params.push_back(p.detach().clone(at::MemoryFormat::Contiguous));
  }
  if (with_optimizer_state) {
    PS_ASSIGN_OR_RETURN(snapshot->optimizer_state,
                        SerializeOptimizerState(server.optimizers()));
  }
  return std::shared_ptr<const Snapshot>(std::move(snapshot));
}

std::shared_ptr<const Snapshot> TakeStepRecord(
    const ParameterServer& server, std::vector<int64_t> applied,
    std::chrono::steady_clock::time_point now) {
  const std::optional<double> lr = server.StepLr(server.version());
  if (!lr || server.has_row_sparse())
    return nullptr;
  auto record = std::make_shared<Snapshot>();
  record->version = server.version();
  record->made_at = now;
  record->applied = std::move(applied);
  record->step_record = true;
  record->lr = *lr;
  for (int k = 0; k < server.num_keys(); ++k) {
    const at::Tensor& p = server.params()[k];
    const at::Tensor& value = server.is_buffer(k) ? p : p.grad();
    if (!value.defined())
      return nullptr;
    record->params.push_back(
        value.detach().clone(at::MemoryFormat::Contiguous));
  }
  return record;
}

}  // namespace pstrain::ps
