#include "ps/service/batch_compute.h"

#include <utility>

#include <torch/torch.h>

#include "models/model_state.h"
#include "ps/engine/batch_runner.h"
#include "ps/job/job_module.h"

namespace pstrain::ps {

struct BatchCompute::Replica {
  std::shared_ptr<models::Model> model;
  std::vector<torch::Tensor> keys;  // the model's, ModelState order
  std::vector<bool> is_buffer;      // by key
  // By key, CPU: what BatchResult lends. On the CPU, the replica's own
  // gradients (backward adds into them in place) and buffers; on GPUs,
  // host copies of them.
  std::vector<torch::Tensor> outputs;
  bool shares_memory = true;  // on the CPU: parameters over the server's
  std::mutex mu;
  std::condition_variable cv;
  std::optional<BatchJob> job;
  bool stop = false;
  std::thread thread;
};

namespace {

// A replica's parameters over the server's memory, each a tensor of its
// own (set_data keeps the replica's version counter and autograd state).
void ShareParameters(const std::vector<at::Tensor>& server,
                     std::vector<torch::Tensor>& keys,
                     const std::vector<bool>& is_buffer) {
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!is_buffer[k])
      keys[k].set_data(server[k]);
  }
}

// What a result lends on the CPU: each parameter's gradient, made once and
// zeroed in place before each batch, and each buffer itself.
std::vector<torch::Tensor> LentKeys(std::vector<torch::Tensor>& keys,
                                    const std::vector<bool>& is_buffer) {
  std::vector<torch::Tensor> lent;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!is_buffer[k])
      keys[k].mutable_grad() = torch::zeros_like(keys[k]);
    lent.push_back(is_buffer[k] ? keys[k] : keys[k].mutable_grad());
  }
  return lent;
}

}  // namespace

BatchCompute::BatchCompute(const std::vector<at::Tensor>& keys,
                           BatchComputeOptions options,
                           std::function<void(const BatchResult&)> done)
    : keys_(keys), options_(std::move(options)), done_(std::move(done)) {}

Result<std::unique_ptr<BatchCompute>> BatchCompute::Make(
    const std::vector<at::Tensor>& keys,
    const std::function<Result<std::shared_ptr<models::Model>>()>& make_model,
    BatchComputeOptions options, std::function<void(const BatchResult&)> done) {
  std::unique_ptr<BatchCompute> c(
      new BatchCompute(keys, std::move(options), std::move(done)));
  for (int i = 0; i < c->options_.replicas; ++i) {
    auto r = std::make_unique<Replica>();
    PS_ASSIGN_OR_RETURN(r->model, make_model());
    for (const auto& s : models::ModelState(*r->model)) {
      r->keys.push_back(s.value);
      r->is_buffer.push_back(s.is_buffer);
    }
    if (r->keys.size() != keys.size())
      return InvalidArgument("a replica of the server's model has " +
                             std::to_string(r->keys.size()) + " keys, not " +
                             std::to_string(keys.size()));
    for (size_t k = 0; k < keys.size(); ++k) {
      if (!r->keys[k].sizes().equals(keys[k].sizes()))
        return InvalidArgument("a replica's key " + std::to_string(k) +
                               " differs from the server's");
    }
    if (c->options_.devices.empty()) {
      ShareParameters(keys, r->keys, r->is_buffer);
      r->outputs = LentKeys(r->keys, r->is_buffer);
    } else {
      r->shares_memory = false;
      r->model->Place(c->options_.devices);
      r->keys = models::StateValues(*r->model);  // Place may move them
      for (const auto& key : keys)
        r->outputs.push_back(torch::zeros_like(key));
    }
    c->replicas_.push_back(std::move(r));
  }
  for (int i = 0; i < c->options_.replicas; ++i) {
    Replica& r = *c->replicas_[i];
    r.thread = std::thread([c = c.get(), &r, i] { c->Loop(r, i); });
  }
  return c;
}

BatchCompute::~BatchCompute() {
  for (auto& r : replicas_) {
    {
      std::lock_guard<std::mutex> lock(r->mu);
      r->stop = true;
    }
    r->cv.notify_one();
  }
  for (auto& r : replicas_) {
    if (r->thread.joinable())
      r->thread.join();
  }
}

void BatchCompute::Run(const BatchJob& job) {
  Replica& r = *replicas_[job.worker % replicas_.size()];
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.job = job;
  }
  r.cv.notify_one();
}

void BatchCompute::Loop(Replica& r, int index) {
  // Dropout's draws differ per replica and repeat from run to run (when
  // one replica runs at a time: the generator is the process's).
  torch::manual_seed(options_.seed * 1000 + static_cast<uint64_t>(index));
  for (;;) {
    BatchJob job;
    {
      std::unique_lock<std::mutex> lock(r.mu);
      r.cv.wait(lock, [&r] { return r.stop || r.job.has_value(); });
      if (r.stop)
        return;
      job = std::move(*r.job);
      r.job.reset();
    }
    done_(Compute(r, job));
  }
}

// Forward and backward on the replica as the server's keys are now; on
// GPUs, the gradients (buffers: values) copied into what the result lends.
BatchResult BatchCompute::Compute(Replica& r, const BatchJob& job) {
  BatchResult result;
  result.peer = job.peer;
  result.request_id = job.request_id;
  result.worker = job.worker;
  result.version = job.version;
  result.keys = &r.outputs;
  try {
    {
      torch::NoGradGuard no_grad;
      for (size_t k = 0; k < r.keys.size(); ++k) {
        if (r.is_buffer[k] || !r.shares_memory)
          r.keys[k].copy_(keys_[k]);
      }
    }
    r.model->zero_grad(/*set_to_none=*/false);
    r.model->train();
    const torch::Device in = options_.devices.empty()
                                 ? torch::Device(torch::kCPU)
                                 : options_.devices.front();
    const torch::Tensor out = r.model->forward(job.x.to(in));
    torch::Tensor loss =
        models::ComputeLoss(options_.loss, out, job.y.to(out.device()));
    loss.backward();
    result.loss = loss.item<double>();
    torch::NoGradGuard no_grad;
    for (size_t k = 0; k < r.keys.size() && !r.shares_memory; ++k) {
      const torch::Tensor& key = r.keys[k];
      if (r.is_buffer[k])
        r.outputs[k].copy_(key);
      else if (key.grad().defined())
        r.outputs[k].copy_(key.grad());
      else
        r.outputs[k].zero_();  // a parameter forward did not use
    }
  } catch (const std::exception& e) {
    result.status = InvalidArgument(
        "push_batch: forward and backward on x " + models::ShapeText(job.x) +
        ", y " + models::ShapeText(job.y) + " failed: " + ErrorLine(e));
  }
  return result;
}

}  // namespace pstrain::ps
