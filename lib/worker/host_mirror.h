#pragma once
// HostMirror: the host-side tensors the wire reads parameters into and
// writes gradients from, one per key (models/model_state.h: parameters and
// buffers, state_dict order). A buffer key pushes the buffer's values where
// a parameter pushes its gradient. On the CPU they are
// the model's own parameters and gradients (no copy at all); on a GPU they
// are pinned CPU tensors of the same shapes, made once, that
// worker/device_copies.h copies to and from the model as keys arrive and
// gradients become final. Not thread-safe. The model must outlive the
// mirror.

#include <vector>

#include <ATen/core/Tensor.h>

#include "models/model.h"

namespace pstrain::worker {

class HostMirror {
 public:
  /// Gives every parameter of `model` a zero gradient (a push needs one
  /// before the first backward). The model is on one device.
  explicit HostMirror(models::Model& model);
  HostMirror(const HostMirror&) = delete;
  HostMirror& operator=(const HostMirror&) = delete;

  /// Where pulled parameters land: contiguous CPU tensors, key order.
  const std::vector<at::Tensor>& params() const { return params_; }
  /// Where pushed gradients (buffers: values) come from: same shapes and
  /// dtypes.
  const std::vector<at::Tensor>& grads() const { return grads_; }
  /// The model's own parameters and buffers, key order.
  const std::vector<at::Tensor>& model_params() const { return model_params_; }
  /// By key: whether it is a buffer (pushes its values).
  const std::vector<bool>& is_buffer() const { return is_buffer_; }
  /// Whether the model is on the CPU (the mirror is then the model itself).
  bool on_cpu() const { return on_cpu_; }

  /// Copies all the pulled parameters into a GPU model and waits; nothing
  /// on the CPU.
  void ParamsToModel();

 private:
  std::vector<at::Tensor> params_, grads_;
  std::vector<at::Tensor> model_params_;
  std::vector<bool> is_buffer_;
  bool on_cpu_ = true;
};

}  // namespace pstrain::worker
