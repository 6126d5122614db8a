#pragma once
// Shard: a ParameterServer (the store) and the update rule of its job,
// driven as the Engine drives them: a gradient goes in piece by piece
// through UpdateRule::PieceBuffer and AddPiece, and a complete push through
// UpdateRule::Push. For the tests of the store and the rules; not
// thread-safe.

#include <cstring>
#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"

namespace pstrain::testing {

class Shard {
 public:
  Shard(const ps::JobSpec& spec, std::vector<at::Tensor> params,
        std::vector<bool> row_sparse = {})
      : store_(spec, std::move(params), std::move(row_sparse)),
        rule_(ps::MakeUpdateRule(spec, &store_)) {}

  ps::ParameterServer& store() { return store_; }
  ps::UpdateRule& rule() { return *rule_; }
  const ps::UpdateRule& rule() const { return *rule_; }

  /// Worker w's bytes [offset, offset + bytes) of `key`, one piece.
  void Accumulate(int w, int key, uint64_t offset, const void* data,
                  uint64_t bytes) {
    std::memcpy(rule_->PieceBuffer(w, key, offset), data, bytes);
    rule_->AddPiece(w, key, offset, bytes);
  }
  /// Worker w's buffers, by key, where a whole push lands (async, ssp,
  /// buffered sync): views of the rule's own.
  std::vector<at::Tensor> grad_buffer(int w) {
    std::vector<at::Tensor> views;
    for (int k = 0; k < store_.num_keys(); ++k) {
      const at::Tensor& p = store_.params()[k];
      views.push_back(at::from_blob(rule_->PieceBuffer(w, k, 0), p.sizes(),
                                    p.options().requires_grad(false)));
    }
    return views;
  }
  bool buffers_pushes() const { return rule_->traits().buffers_pushes; }
  /// The workers that have not pushed for this version (every worker is a
  /// member: no Membership here).
  std::vector<int> MissingPushes() const {
    std::vector<int> missing;
    for (int w = 0; w < store_.num_workers(); ++w) {
      if (rule_->awaits_push(w))
        missing.push_back(w);
    }
    return missing;
  }

  Result<bool> Push(int w, uint64_t version, bool refused = false) {
    return rule_->Push(w, version, refused);
  }
  Status CheckPush(int w, uint64_t version) const {
    return rule_->CheckPush(w, version);
  }
  bool CloseStep() { return rule_->CloseStep(); }
  void DiscardStep() { rule_->DiscardStep(); }
  uint64_t discarded_steps() const { return rule_->discarded_steps(); }
  uint64_t dropped_pushes() const { return rule_->dropped_pushes(); }
  int pushes_this_step() const { return rule_->pushes_this_step(); }
  void set_step_by_key(bool on) { rule_->set_step_by_key(on); }
  int UpdateNextKey() { return rule_->UpdateNextKey(); }
  void UpdateAllKeys() { rule_->UpdateAllKeys(); }
  const ps::StepOrder& step_order() const { return rule_->step_order(); }
  bool version_complete() const { return rule_->version_complete(); }
  void NoteParamsSent(int w) { rule_->NoteParamsSent(w); }
  const at::Tensor& SentParam(int w, int key) const {
    return rule_->SentParam(w, key);
  }
  uint64_t delay_compensation_bytes_per_worker() const {
    return rule_->delay_compensation_bytes_per_worker();
  }
  std::vector<uint64_t> staleness_histogram() const {
    return rule_->staleness_histogram();
  }

  int num_keys() const { return store_.num_keys(); }
  uint64_t version() const { return store_.version(); }
  uint64_t pushes() const { return store_.pushes(); }
  const std::vector<at::Tensor>& params() const { return store_.params(); }
  const std::vector<torch::optim::Optimizer*>& optimizers() const {
    return store_.optimizers();
  }

 private:
  ps::ParameterServer store_;
  std::unique_ptr<ps::UpdateRule> rule_;
};

}  // namespace pstrain::testing
