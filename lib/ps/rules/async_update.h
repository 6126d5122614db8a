#pragma once
// AsyncUpdate: async and ssp (Li et al. OSDI 2014, section 3): each push
// lands whole in the worker's own GradBuffers and steps the optimizer at
// once, making a version, at the lr the AsyncRecipe gives its share and
// staleness (ps/rules/async_recipe.h), after its DC-ASGD correction; its
// buffer keys take the push's values, in arrival order. A refused push is
// never applied. ssp differs only in its traits: the Engine's SspGate
// holds replies for the staleness bound. It keeps the staleness histogram
// and, by worker, the last push applied. Not thread-safe.

#include <cstdint>
#include <memory>
#include <vector>

#include "ps/rules/async_recipe.h"
#include "ps/rules/grad_buffers.h"
#include "ps/rules/step_order.h"
#include "ps/rules/update_rule.h"

namespace pstrain::ps {

class AsyncUpdate : public UpdateRule {
 public:
  /// `spec`'s mode is async or ssp. `store` must outlive the rule.
  AsyncUpdate(const JobSpec& spec, ParameterServer* store);

  char* PieceBuffer(int w, int key, uint64_t offset) override {
    return buffers_.Piece(w, key, offset);
  }
  void AddPiece(int, int, uint64_t, uint64_t) override {}
  void AddRecord(int w, int key, wire::Codec codec,
                 const wire::CodecParams& params, const uint8_t* data,
                 uint64_t nbytes) override {
    buffers_.DecodeRecord(w, key, codec, params, data, nbytes);
  }
  void AddRows(int, int) override {}  // they wait in RowsBuffer for Push
  Status CheckPush(int, uint64_t) const override { return Status::Ok(); }
  bool RemoveWorker(int) override { return false; }
  bool AddWorker(int) override { return false; }
  const StepOrder& step_order() const override { return order_; }

  void NoteParamsSent(int w) override;
  const at::Tensor& SentParam(int w, int key) const override;
  std::vector<uint64_t> staleness_histogram() const override {
    return staleness_histogram_;
  }
  uint64_t delay_compensation_bytes_per_worker() const override {
    return recipe_->delay_compensation_bytes_per_worker();
  }

 private:
  Result<bool> Apply(int w, uint64_t version, bool refused) override;

  GradBuffers buffers_;
  std::unique_ptr<AsyncRecipe> recipe_;
  std::vector<uint64_t> staleness_histogram_;
  StepOrder order_;  // key order: every key holds the version
};

}  // namespace pstrain::ps
