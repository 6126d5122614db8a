#include "worker/row_slices.h"

#include <utility>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "ps/job/sparse_keys.h"
#include "wire/compression.h"

namespace pstrain::worker {

bool RowSlices::Plan(const ps::ShardPlan& plan,
                     const std::vector<bool>& model_keys,
                     const std::vector<at::Tensor>& tables,
                     const std::vector<at::Tensor>& grads,
                     const ps::CompressionSpec& compression) {
  slots_.assign(plan.num_servers, {});
  refs_.assign(plan.num_servers, {});
  bool any = false;
  for (int s = 0; s < plan.num_servers; ++s) {
    const auto& mine = plan.by_server[s];
    for (size_t j = 0; j < mine.size(); ++j) {
      const ps::Slice& slice = plan.slices[mine[j]];
      if (!model_keys.at(slice.key))
        continue;
      SparseSlot slot;
      slot.key = static_cast<uint32_t>(j);
      const at::Tensor& table = tables[slice.key];
      slot.push_codec = ps::PushRowsCodecOf(compression, table);
      slot.pull_codec = ps::PullRowsCodecOf(compression, table);
      slot.push_rows =
          at::empty({0, grads[slice.key].size(1)},
                    grads[slice.key].options().requires_grad(false));
      slots_[s].push_back(std::move(slot));
      refs_[s].push_back({slice.key, slice.row_begin, slice.row_end});
      any = true;
    }
  }
  if (!any) {
    slots_.clear();
    refs_.clear();
  }
  return any;
}

bool RowSlices::Holds(int s, int key) const {
  if (refs_.empty())
    return false;
  for (const Ref& ref : refs_[s]) {
    if (ref.key == key)
      return true;
  }
  return false;
}

void RowSlices::SetRows(int key, const std::vector<int64_t>& touched,
                        const std::vector<int64_t>& next,
                        const std::vector<at::Tensor>& grads,
                        const wire::CodecParams& params) {
  for (size_t s = 0; s < slots_.size(); ++s) {
    for (size_t j = 0; j < slots_[s].size(); ++j) {
      const Ref& ref = refs_[s][j];
      if (ref.key != key)
        continue;
      SparseSlot& slot = slots_[s][j];
      ps::RowsInRange(touched, ref.row_begin, ref.row_end, &slot.push_ids);
      ps::RowsInRange(next, ref.row_begin, ref.row_end, &slot.want_ids);
      // Its shape is in the push's meta, its storage in the push's data,
      // before GatherRows fills it.
      slot.push_rows = at::empty(
          {static_cast<int64_t>(slot.push_ids.size()), grads[key].size(1)},
          grads[key].options().requires_grad(false));
      if (slot.push_codec != wire::Codec::kRaw) {
        slot.push_record.resize(
            wire::CompressedBytes(slot.push_codec, params,
                                  static_cast<size_t>(slot.push_rows.numel())));
      }
      rows_pushed_ += slot.push_ids.size();
      rows_pulled_ += slot.want_ids.size();
    }
  }
}

void RowSlices::GatherRows(const std::vector<at::Tensor>& grads,
                           const wire::CodecParams& params) {
  at::NoGradGuard no_grad;
  for (size_t s = 0; s < slots_.size(); ++s) {
    for (size_t j = 0; j < slots_[s].size(); ++j) {
      const Ref& ref = refs_[s][j];
      SparseSlot& slot = slots_[s][j];
      const at::Tensor ids =
          at::tensor(slot.push_ids, at::kLong).add_(ref.row_begin);
      at::index_select_out(slot.push_rows, grads[ref.key], 0, ids);
      if (slot.push_codec != wire::Codec::kRaw) {
        wire::Encode(slot.push_codec, params, slot.push_rows.data_ptr<float>(),
                     static_cast<size_t>(slot.push_rows.numel()), 0,
                     slot.push_record.data());
      }
    }
  }
}

}  // namespace pstrain::worker
