#pragma once
// SyncRule: the step state that streaming and buffered sync share
// (share/doc/design.md, "Update rules"; Li et al. OSDI 2014, section 3): a
// version is one step of all workers. Gradients of version t are summed
// per key (StepSums); when the step closes, the sums over their count are
// the gradient, the optimizer steps once, and the store holds version t+1.
// It keeps who pushed this step and how many pushes close it (the quorum's
// members, less those the StepDriver took out), a refused push's
// discarded step, and key-by-key stepping: with one optimizer a closed
// step is applied one key at a time in its StepOrder, or a key ahead of
// the close once every member's pieces of it are in. Row-sparse keys sum
// their touched rows beside the dense sums. Not thread-safe.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/rules/step_order.h"
#include "ps/rules/step_sums.h"
#include "ps/rules/update_rule.h"

namespace pstrain::ps {

class SyncRule : public UpdateRule {
 public:
  /// Every worker of `spec` is in the quorum at first.
  SyncRule(const JobSpec& spec, ParameterServer* store);

  Status CheckPush(int w, uint64_t version) const override;
  bool RemoveWorker(int w) override;
  bool AddWorker(int w) override;
  bool awaits_push(int w) const override { return !pushed_[w]; }
  int pushes_this_step() const override { return push_count_; }
  void DiscardStep() override { discards_.pending = true; }
  uint64_t discarded_steps() const override { return discards_.count; }

  void set_step_by_key(bool on) override;
  int UpdateNextKey() override;
  const StepOrder& step_order() const override { return order_; }
  bool set_step_order(const std::vector<int>& keys) override {
    return order_.Set(keys);
  }
  bool version_complete() const override { return order_.idle(); }
  bool updates_ahead() const override { return by_key_.ahead; }
  bool ReadyAhead(int key) const override;
  void UpdateAhead(int key) override;

 protected:
  // Worker w's piece, or whole record, into the sums (streaming sync). A
  // piece is checked for NaN and Inf as it is added (StepSums::Add): false
  // when it held one, whose sum is then garbage; the step is discarded.
  bool Accumulate(int w, int key, uint64_t offset, const void* data,
                  uint64_t bytes);
  void AccumulateRecord(int w, int key, wire::Codec codec,
                        const wire::CodecParams& params, const uint8_t* data,
                        uint64_t nbytes);
  // Worker w's rows of `key` (ParameterServer::RowsBuffer) into the sums,
  // as a piece of its push (streaming sync), or at the close (buffered).
  void AccumulateRows(int w, int key);
  void AddRowsToSums(int w, int key);
  // Worker w left the step: its pieces stay in their sums, and those that
  // waited only for it are divided (StepSums::Remove).
  void RemoveFromSums(int w) { sums_.Remove(w, needed_); }
  // Worker w's complete push counts in this step; returns the pushes in
  // now. REQUIRES: CheckPush passed.
  int CountPush(int w);
  // The sums of a key, to fill from whole pushes (buffered sync).
  at::Tensor& sum(int key) { return sums_.sum(key); }
  int needed() const { return needed_; }
  // Steps on the sums over their count and opens the next step.
  void FinishStep();
  // Worker w left this step before its push was complete; needed() is one
  // fewer already. Returns whether that closed the step.
  virtual bool LeftStep(int w) = 0;

 private:
  // Sync: the sums' touched rows over their count become each key's pending
  // gradient (unless `discard`); the sums are cleared.
  void TakeRowSums(bool discard);

  StepSums sums_;
  std::vector<bool> pushed_;  // per worker, this step
  int push_count_ = 0;
  int needed_;                 // complete pushes that close this step
  int members_;                // pushes the next step needs
  bool step_started_ = false;  // a push or piece of this step is in
  // Whether this step is to be discarded (DiscardStep), and how many were.
  struct Discards {
    bool pending = false;
    uint64_t count = 0;
  };
  Discards discards_;
  StepOrder order_;
  // --server_threads 1: a closed step applied key by key (UpdateNextKey), at
  // `lr`; `ahead`: updates_ahead(); `possible`: the job allows it.
  struct KeyByKey {
    bool on = false;
    bool ahead = false;
    bool possible = false;
    double lr = 0;
  };
  KeyByKey by_key_;
  // Row-sparse keys: by key, the rows this step touched (bool [rows]) and
  // the pushes summed into them.
  std::vector<at::Tensor> touched_;
  std::vector<int> adds_;
};

}  // namespace pstrain::ps
