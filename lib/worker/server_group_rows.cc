// The row-sparse keys of a ServerGroup (share/doc/design.md, "Sparse
// rows"): each server's slices of a table as SparseSlots, the rows a batch
// touches and the next batch looks up, and the touched rows gathered from
// the gradient after backward and, when the job's rule says so
// (ps::PushRowsCodecOf), coded.

#include <ATen/ATen.h>

#include "ps/job/sparse_keys.h"
#include "wire/compression.h"
#include "worker/server_group.h"

namespace pstrain::worker {

void ServerGroup::SetRowSparse(const std::vector<bool>& model_keys) {
  sparse_slots_.assign(spec_.num_servers, {});
  sparse_refs_.assign(spec_.num_servers, {});
  bool any = false;
  for (int s = 0; s < spec_.num_servers; ++s) {
    const auto& mine = plan_.by_server[s];
    for (size_t j = 0; j < mine.size(); ++j) {
      const ps::Slice& slice = plan_.slices[mine[j]];
      if (!model_keys.at(slice.key))
        continue;
      SparseSlot slot;
      slot.key = static_cast<uint32_t>(j);
      const at::Tensor& table = mirror_->model_params()[slice.key];
      slot.push_codec = ps::PushRowsCodecOf(compression_, table);
      slot.pull_codec = ps::PullRowsCodecOf(compression_, table);
      slot.push_rows =
          at::empty({0, mirror_->grads()[slice.key].size(1)},
                    mirror_->grads()[slice.key].options().requires_grad(false));
      sparse_slots_[s].push_back(std::move(slot));
      sparse_refs_[s].push_back({slice.key, slice.row_begin, slice.row_end});
      any = true;
    }
  }
  if (!any) {
    sparse_slots_.clear();
    sparse_refs_.clear();
    return;
  }
  for (int s = 0; s < spec_.num_servers; ++s) {
    clients_[s]->SetSparse(&sparse_slots_[s]);
    MakeCompressor(s);  // row-sparse slices travel as rows
    clients_[s]->SetCompressor(compressors_[s].get());
  }
}

void ServerGroup::SetRows(int key, const std::vector<int64_t>& touched,
                          const std::vector<int64_t>& next) {
  for (size_t s = 0; s < sparse_slots_.size(); ++s) {
    for (size_t j = 0; j < sparse_slots_[s].size(); ++j) {
      const SparseRef& ref = sparse_refs_[s][j];
      if (ref.key != key)
        continue;
      SparseSlot& slot = sparse_slots_[s][j];
      ps::RowsInRange(touched, ref.row_begin, ref.row_end, &slot.push_ids);
      ps::RowsInRange(next, ref.row_begin, ref.row_end, &slot.want_ids);
      // Its shape is in the push's meta, its storage in the push's data,
      // before GatherRows fills it.
      slot.push_rows =
          at::empty({static_cast<int64_t>(slot.push_ids.size()),
                     mirror_->grads()[key].size(1)},
                    mirror_->grads()[key].options().requires_grad(false));
      if (slot.push_codec != wire::Codec::kRaw) {
        slot.push_record.resize(
            wire::CompressedBytes(slot.push_codec, compression_.params,
                                  static_cast<size_t>(slot.push_rows.numel())));
      }
      rows_pushed_ += slot.push_ids.size();
      rows_pulled_ += slot.want_ids.size();
    }
  }
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
  at::NoGradGuard no_grad;
  for (size_t s = 0; s < sparse_slots_.size(); ++s) {
    for (size_t j = 0; j < sparse_slots_[s].size(); ++j) {
      const SparseRef& ref = sparse_refs_[s][j];
      SparseSlot& slot = sparse_slots_[s][j];
      const at::Tensor ids =
          at::tensor(slot.push_ids, at::kLong).add_(ref.row_begin);
      at::index_select_out(slot.push_rows, mirror_->grads()[ref.key], 0, ids);
      if (slot.push_codec != wire::Codec::kRaw) {
        wire::Encode(slot.push_codec, compression_.params,
                     slot.push_rows.data_ptr<float>(),
                     static_cast<size_t>(slot.push_rows.numel()), 0,
                     slot.push_record.data());
      }
    }
  }
}

}  // namespace pstrain::worker
