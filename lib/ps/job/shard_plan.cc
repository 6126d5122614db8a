#include "ps/job/shard_plan.h"

#include <algorithm>
#include <numeric>

#include "ps/job/rule_traits.h"
#include "wire/tensor_desc.h"

namespace pstrain::ps {

namespace {

uint64_t KeyBytes(const wire::KeySpec& k) {
  uint64_t n = wire::DTypeSize(k.dtype);
  for (int64_t d : k.shape)
    n *= static_cast<uint64_t>(d);
  return n;
}

// Step 1: whole keys, or row slices of the large ones.
std::vector<Slice> SplitKeys(const std::vector<wire::KeySpec>& keys, bool split,
                             uint64_t slice_bytes) {
  std::vector<Slice> slices;
  for (size_t k = 0; k < keys.size(); ++k) {
    const uint64_t bytes = KeyBytes(keys[k]);
    const int64_t rows = keys[k].shape.empty() ? 1 : keys[k].shape[0];
    const uint64_t row_bytes = rows > 0 ? bytes / rows : 0;
    int64_t parts = 1;
    if (split && bytes > slice_bytes && rows > 1) {
      const int64_t rows_per_slice =
          std::max<int64_t>(1, static_cast<int64_t>(slice_bytes / row_bytes));
      parts = (rows + rows_per_slice - 1) / rows_per_slice;
    }
    for (int64_t i = 0; i < parts; ++i) {
      Slice s;
      s.key = static_cast<int>(k);
      s.row_begin = rows * i / parts;
      s.row_end = rows * (i + 1) / parts;
      s.whole = parts == 1;
      s.bytes = s.whole ? bytes : row_bytes * (s.row_end - s.row_begin);
      slices.push_back(s);
    }
  }
  return slices;
}

}  // namespace

double ShardPlan::imbalance() const {
  const uint64_t total =
      std::accumulate(server_bytes.begin(), server_bytes.end(), uint64_t{0});
  if (total == 0)
    return 1.0;
  const uint64_t max =
      *std::max_element(server_bytes.begin(), server_bytes.end());
  return static_cast<double>(max) * num_servers / static_cast<double>(total);
}

Result<ShardPlan> PlanShards(const std::vector<wire::KeySpec>& keys,
                             int num_servers, uint64_t slice_bytes,
                             bool split) {
  if (num_servers < 1) {
    return InvalidArgument("--num_servers " + std::to_string(num_servers) +
                           ": expected >= 1");
  }
  if (slice_bytes == 0)
    return InvalidArgument("--slice_bytes 0: expected > 0");
  ShardPlan plan;
  plan.num_servers = num_servers;
  plan.slices = SplitKeys(keys, split || num_servers > 1, slice_bytes);
  plan.server_bytes.assign(num_servers, 0);
  plan.by_server.assign(num_servers, {});
  // Step 2 (LPT). stable_sort keeps key order among equal sizes.
  std::vector<int> order(plan.slices.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return plan.slices[a].bytes > plan.slices[b].bytes;
  });
  for (int i : order) {
    auto least =
        std::min_element(plan.server_bytes.begin(), plan.server_bytes.end());
    plan.slices[i].server = static_cast<int>(least - plan.server_bytes.begin());
    *least += plan.slices[i].bytes;
  }
  // Step 3.
  for (size_t i = 0; i < plan.slices.size(); ++i) {
    plan.by_server[plan.slices[i].server].push_back(static_cast<int>(i));
  }
  return plan;
}

Result<ShardPlan> PlanShardsOf(const std::vector<wire::KeySpec>& keys,
                               const JobSpec& spec) {
  const RuleTraits t = RuleTraitsOf(spec);
  const bool streaming =
      t.waits_for_every_member && !t.buffers_pushes && !t.applies_each_push;
  return PlanShards(keys, spec.num_servers, spec.slice_bytes,
                    streaming && spec.placement == "worker");
}

std::vector<at::Tensor> SliceViews(const ShardPlan& plan, int server,
                                   const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> views;
  for (int i : plan.by_server.at(server)) {
    const Slice& s = plan.slices[i];
    const at::Tensor& t = tensors.at(s.key);
    views.push_back(
        s.whole ? t : t.narrow(0, s.row_begin, s.row_end - s.row_begin));
  }
  return views;
}

std::vector<at::Tensor> SliceLeaves(const ShardPlan& plan, int server,
                                    const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> leaves;
  for (int i : plan.by_server.at(server)) {
    const Slice& s = plan.slices[i];
    const at::Tensor& p = params.at(s.key);
    if (s.whole) {
      leaves.push_back(p);
      continue;
    }
    // detach(): a view of the same storage with no autograd history, so the
    // narrowed slice can be a leaf of its own.
    leaves.push_back(p.detach()
                         .narrow(0, s.row_begin, s.row_end - s.row_begin)
                         .requires_grad_(p.requires_grad()));
  }
  return leaves;
}

}  // namespace pstrain::ps
