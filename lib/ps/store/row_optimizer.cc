#include "ps/store/row_optimizer.h"

#include <cmath>
#include <utility>

#include <ATen/Functions.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/archive.h>

#include "ps/job/sparse_keys.h"
#include "util/check.h"

namespace pstrain::ps {

namespace {

double Eps(const JobSpec& spec, double fallback) {
  return spec.eps > 0 ? spec.eps : fallback;
}

}  // namespace

// The base keeps the table as its one param group, with options that hold
// the lr (SGDOptions: SetLr sets it like any optimizer's).
RowOptimizer::RowOptimizer(const JobSpec& spec, at::Tensor table)
    : Optimizer({torch::optim::OptimizerParamGroup({table})},
                std::make_unique<torch::optim::SGDOptions>(spec.lr)),
      spec_(spec),
      table_(std::move(table)) {
  PS_CHECK(HasLazyRows(spec)) << "no lazy rows for " << spec.optimizer;
  PS_CHECK(table_.dim() == 2 && table_.is_contiguous())
      << "a row-sparse key is a contiguous [rows, row_dim] table";
  auto zeros = [&] { return at::zeros_like(table_); };
  if (spec.optimizer == "sgd") {
    kind_ = spec.momentum > 0 ? Kind::kMomentum : Kind::kSgd;
    if (kind_ == Kind::kMomentum)
      state_.emplace_back("momentum_buffer", zeros());
  } else if (spec.optimizer == "adagrad") {
    kind_ = Kind::kAdagrad;
    state_.emplace_back("sum", zeros());
  } else {
    kind_ = Kind::kAdam;
    state_.emplace_back("exp_avg", zeros());
    state_.emplace_back("exp_avg_sq", zeros());
    state_.emplace_back("step", at::zeros({table_.size(0)}, at::kLong));
  }
}

void RowOptimizer::SetGradient(at::Tensor ids, at::Tensor grad) {
  ids_ = std::move(ids);
  grad_ = std::move(grad);
}

// Each rule gathers the named rows, runs on them the tensor operations
// libtorch's dense optimizer runs on the whole table (torch/csrc/api/src/
// optim/{sgd,adagrad,adam}.cpp), and scatters them back.
at::Tensor RowOptimizer::step(LossClosure) {
  if (!ids_.defined())
    return {};
  const at::Tensor ids = std::move(ids_);
  const at::Tensor g = std::move(grad_);
  ids_ = grad_ = at::Tensor();
  if (ids.numel() == 0)
    return {};
  at::NoGradGuard no_grad;
  const double lr = param_groups()[0].options().get_lr();
  at::Tensor p = table_.index_select(0, ids);
  switch (kind_) {
    case Kind::kSgd:
      p.add_(g, -lr);
      break;
    case Kind::kMomentum: {
      at::Tensor buf = State(0).index_select(0, ids);
      buf.mul_(spec_.momentum).add_(g);  // a fresh row's buf: 0 * m + g = g
      State(0).index_copy_(0, ids, buf);
      p.add_(spec_.nesterov ? g.add(buf, spec_.momentum) : buf, -lr);
      break;
    }
    case Kind::kAdagrad: {
      at::Tensor sum = State(0).index_select(0, ids);
      sum.addcmul_(g, g, 1.0);
      State(0).index_copy_(0, ids, sum);
      p.addcdiv_(g, sum.sqrt().add_(Eps(spec_, 1e-10)), -lr);
      break;
    }
    case Kind::kAdam: {
      const double b1 = spec_.betas[0], b2 = spec_.betas[1];
      at::Tensor m = State(0).index_select(0, ids);
      at::Tensor v = State(1).index_select(0, ids);
      at::Tensor step = State(2).index_select(0, ids).add_(1);
      m.mul_(b1).add_(g, 1 - b1);
      v.mul_(b2).addcmul_(g, g, 1 - b2);
      State(0).index_copy_(0, ids, m);
      State(1).index_copy_(0, ids, v);
      State(2).index_copy_(0, ids, step);
      // Per row: 1 - beta^step, as a column [n, 1] of the table's dtype.
      const at::Tensor t = step.to(table_.scalar_type()).unsqueeze(1);
      const at::Tensor bias1 = 1 - at::pow(b1, t);
      const at::Tensor bias2 = 1 - at::pow(b2, t);
      const at::Tensor denom = (v.sqrt() / bias2.sqrt()).add_(Eps(spec_, 1e-8));
      p.addcdiv_(m, denom * bias1, -lr);
      break;
    }
  }
  table_.index_copy_(0, ids, p);
  return {};
}

void RowOptimizer::save(torch::serialize::OutputArchive& archive) const {
  archive.write("row_optimizer", at::tensor(static_cast<int64_t>(kind_)));
  for (const auto& [name, tensor] : state_)
    archive.write(name, tensor, /*is_buffer=*/true);
}

void RowOptimizer::load(torch::serialize::InputArchive& archive) {
  at::Tensor kind;
  archive.read("row_optimizer", kind);
  TORCH_CHECK(kind.item<int64_t>() == static_cast<int64_t>(kind_),
              "the row optimizer state of another optimizer");
  for (auto& [name, tensor] : state_) {
    at::Tensor saved;
    archive.read(name, saved, /*is_buffer=*/true);
    TORCH_CHECK(saved.sizes() == tensor.sizes(), name, " has shape ",
                saved.sizes(), ", expected ", tensor.sizes());
    tensor.copy_(saved);
  }
}

}  // namespace pstrain::ps
