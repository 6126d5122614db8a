// The row-sparse keys of a ServerGroup (share/doc/design.md, "Sparse
// rows"): each server's slices of a table as SparseSlots (RowSlices), the
// rows a batch touches and the next batch looks up, and the touched rows
// gathered from the gradient after backward and, when the job's rule says
// so (ps::PushRowsCodecOf), coded.

#include "worker/server_group.h"

namespace pstrain::worker {

void ServerGroup::SetRowSparse(const std::vector<bool>& model_keys) {
  if (!rows_.Plan(plan_, model_keys, mirror_->model_params(), mirror_->grads(),
                  compressors_.spec()))
    return;
  for (int s = 0; s < spec_.num_servers; ++s) {
    clients_[s]->SetSparse(rows_.slots(s));
    MakeCompressor(s);  // row-sparse slices travel as rows
    clients_[s]->SetCompressor(compressors_.of(s));
  }
}

void ServerGroup::SetRows(int key, const std::vector<int64_t>& touched,
                          const std::vector<int64_t>& next) {
  rows_.SetRows(key, touched, next, mirror_->grads(),
                compressors_.spec().params);
}

Status ServerGroup::PlanRows(BatchRows& rows, int64_t global, int64_t end,
                             const data::Batch& batch,
                             const BatchRows::ReadBatch& read) {
  if (rows.empty())
    return Status::Ok();
  if (rows.NeedsPull(global, pulls_)) {
    PS_RETURN_IF_ERROR(Finish());
    PS_RETURN_IF_ERROR(ExchangeAll(Exchange::kPull));
    mirror_->ParamsToModel();
  }
  std::vector<int64_t> now, next;
  rows.Plan(global, end, pulls_, batch, read, &now, &next);
  for (int k : rows.keys())
    SetRows(k, now, next);
  return Status::Ok();
}

void ServerGroup::GatherRows() {
  rows_.GatherRows(mirror_->grads(), compressors_.spec().params);
}

}  // namespace pstrain::worker
