#include "models/dlrm.h"

#include <cmath>

#include <torch/torch.h>

namespace pstrain::models {

namespace nn = torch::nn;

namespace {

// Linear(n, m) initialised as the reference's create_mlp does.
nn::Linear MakeLinear(int64_t n, int64_t m) {
  nn::Linear layer(n, m);
  torch::NoGradGuard no_grad;
  layer->weight.normal_(0, std::sqrt(2.0 / static_cast<double>(m + n)));
  layer->bias.normal_(0, std::sqrt(1.0 / static_cast<double>(m)));
  return layer;
}

// The layers from `in` through `widths`, each but the last followed by a
// ReLU; the last too unless `last_bare`.
nn::Sequential MakeMlp(int64_t in, const std::vector<int64_t>& widths,
                       bool last_bare) {
  nn::Sequential mlp;
  for (size_t i = 0; i < widths.size(); ++i) {
    mlp->push_back(MakeLinear(in, widths[i]));
    if (!(last_bare && i + 1 == widths.size()))
      mlp->push_back(nn::ReLU());
    in = widths[i];
  }
  return mlp;
}

}  // namespace

std::vector<int64_t> DlrmOptions::KaggleTableRows() {
  return {1460,  583,  10131227, 2202608, 305, 24,     12517,   633,   3,
          93145, 5683, 8351593,  3194,    27,  14992,  5461306, 10,    5652,
          2173,  4,    7046547,  18,      15,  286181, 105,     142572};
}

Dlrm::Dlrm(const DlrmOptions& options) : options_(options) {
  TORCH_CHECK(!options.bottom.empty(), "dlrm: the bottom MLP has no layer");
  TORCH_CHECK(!options.top.empty() && options.top.back() == 1,
              "dlrm: the top MLP must end in one output");
  const int64_t d = options.bottom.back();
  // The reference's order: its state_dict lists emb_l, bot_l, top_l.
  emb_l_ = register_module("emb_l", nn::ModuleList());
  for (int64_t rows : options.table_rows) {
    TORCH_CHECK(rows >= 1, "dlrm: a table of ", rows, " rows");
    nn::EmbeddingBag table(nn::EmbeddingBagOptions(rows, d).mode(torch::kSum));
    torch::NoGradGuard no_grad;
    const double bound = std::sqrt(1.0 / static_cast<double>(rows));
    table->weight.uniform_(-bound, bound);
    emb_l_->push_back(table);
  }
  bot_l_ = register_module(
      "bot_l", MakeMlp(options.dense_features, options.bottom, false));
  const auto vectors = static_cast<int64_t>(options.table_rows.size()) + 1;
  top_l_ = register_module(
      "top_l", MakeMlp(d + vectors * (vectors - 1) / 2, options.top, true));
  // Pairs (i, j), j < i, i ascending: the reference's order. Not a buffer:
  // no state_dict entry.
  pairs_ = torch::tril_indices(vectors, vectors, -1);
}

torch::Tensor Dlrm::Interact(const torch::Tensor& x,
                             const std::vector<torch::Tensor>& embedded) const {
  std::vector<torch::Tensor> all = {x};
  all.insert(all.end(), embedded.begin(), embedded.end());
  const int64_t b = x.size(0), d = x.size(1);
  const torch::Tensor t = torch::cat(all, 1).view({b, -1, d});
  const torch::Tensor z = torch::bmm(t, t.transpose(1, 2));
  const torch::Tensor pairs = pairs_.to(x.device());
  const torch::Tensor flat =
      z.index({torch::indexing::Slice(), pairs[0], pairs[1]});
  return torch::cat({x, flat}, 1);
}

torch::Tensor Dlrm::Forward(const torch::Tensor& dense,
                            const torch::Tensor& rows) {
  AwaitAll();
  const torch::Tensor x = bot_l_->forward(dense);
  std::vector<torch::Tensor> embedded;
  const int64_t b = rows.size(0);
  const torch::Tensor offsets = torch::arange(
      b, torch::TensorOptions().dtype(torch::kLong).device(rows.device()));
  for (size_t t = 0; t < emb_l_->size(); ++t) {
    auto table = emb_l_->ptr<nn::EmbeddingBagImpl>(t);
    embedded.push_back(table->forward(
        rows.select(1, static_cast<int64_t>(t)).contiguous(), offsets));
  }
  return top_l_->forward(Interact(x, embedded)).view({b});
}

torch::Tensor Dlrm::forward(torch::Tensor x) {
  const int64_t f = options_.dense_features;
  const torch::Tensor dense = x.narrow(1, 0, f).to(torch::kFloat);
  const torch::Tensor rows = x.narrow(1, f, x.size(1) - f).to(torch::kLong);
  return Forward(dense, rows).unsqueeze(1);
}

}  // namespace pstrain::models
