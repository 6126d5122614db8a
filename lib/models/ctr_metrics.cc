#include "models/ctr_metrics.h"

#include <limits>

#include <ATen/ATen.h>

namespace pstrain::models {

double Auc(const at::Tensor& scores, const at::Tensor& labels) {
  TORCH_CHECK(scores.numel() == labels.numel(), "Auc: ", scores.numel(),
              " scores and ", labels.numel(), " labels");
  const at::Tensor s = scores.reshape({-1}).to(at::kDouble).cpu();
  const at::Tensor y = labels.reshape({-1}).to(at::kDouble).cpu();
  const int64_t n = s.numel();
  const at::Tensor order = std::get<1>(s.sort(/*stable=*/true, 0, false));
  const double* score = s.data_ptr<double>();
  const double* label = y.data_ptr<double>();
  const int64_t* by_score = order.data_ptr<int64_t>();
  // Ranks of the clicks, tied scores sharing their mean rank.
  double click_ranks = 0, clicks = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    double tied_clicks = 0;
    while (j < n && score[by_score[j]] == score[by_score[i]])
      tied_clicks += label[by_score[j++]];
    click_ranks += tied_clicks * (static_cast<double>(i + 1 + j) / 2);
    clicks += tied_clicks;
    i = j;
  }
  const double others = static_cast<double>(n) - clicks;
  if (clicks == 0 || others == 0)
    return std::numeric_limits<double>::quiet_NaN();
  return (click_ranks - clicks * (clicks + 1) / 2) / (clicks * others);
}

double LogLoss(const at::Tensor& logits, const at::Tensor& labels) {
  if (logits.numel() == 0)
    return 0;
  return at::binary_cross_entropy_with_logits(
             logits.reshape({-1}).to(at::kDouble),
             labels.reshape({-1}).to(at::kDouble))
      .item<double>();
}

}  // namespace pstrain::models
