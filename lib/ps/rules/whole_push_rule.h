#pragma once
// WholePushRule: the part that async, ssp and buffered sync share. A push
// lands whole in the worker's own gradient buffer
// (ParameterServer::grad_buffer), nothing is added while it is read, and a
// refused push is never applied: it changes no parameter and makes no step.

#include "ps/rules/update_rule.h"

namespace pstrain::ps {

class WholePushRule : public UpdateRule {
 public:
  /// `server` must outlive the rule; REQUIRES: server->buffers_pushes()
  /// and traits.buffers_pushes.
  WholePushRule(ParameterServer* server, const RuleTraits& traits)
      : UpdateRule(traits), server_(server) {}

  char* PieceBuffer(int w, int key, uint64_t offset) override {
    return static_cast<char*>(server_->grad_buffer(w)[key].data_ptr()) + offset;
  }
  void AddPiece(int, int, uint64_t, uint64_t) override {}
  // The worker's buffer holds the decoded gradient: a record of topk
  // names only some elements, and the rest are zero.
  void AddRecord(int w, int key, wire::Codec codec,
                 const wire::CodecParams& params, const uint8_t* data,
                 uint64_t nbytes) override {
    const at::Tensor& g = server_->grad_buffer(w)[key];
    g.zero_();
    wire::DecodeAdd(codec, params, data, nbytes, static_cast<size_t>(g.numel()),
                    1.0f, g.data_ptr<float>());
  }
  Result<bool> Push(int w, uint64_t version, bool refused) override {
    if (refused)
      return false;
    return server_->Push(w, version);
  }

 private:
  ParameterServer* server_;
};

}  // namespace pstrain::ps
