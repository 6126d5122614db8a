#pragma once
// The metrics click-through-rate models are read by (share/doc/ctr.md):
// the area under the ROC curve and the log loss of predicted click
// probabilities against clicks. Stateless functions; thread-safe.

#include <ATen/core/Tensor.h>

namespace pstrain::models {

/// The area under the ROC curve of `scores` (float32 or float64 [n]: any
/// monotone score, a logit or a probability) against `labels` ([n], 0 or
/// 1): the probability that a random click scores above a random non-click,
/// ties counting one half (the Mann-Whitney U statistic over the product
/// of the counts; Hanley and McNeil, Radiology 1982). NaN when the labels
/// are all 0 or all 1. Throws c10::Error when the sizes differ.
double Auc(const at::Tensor& scores, const at::Tensor& labels);

/// The mean binary cross-entropy of `logits` ([n]) against `labels` ([n],
/// 0 or 1), in nats, computed from the logits (as BCE with logits is, so
/// that a confident logit gives no infinity). 0 for n = 0.
double LogLoss(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace pstrain::models
