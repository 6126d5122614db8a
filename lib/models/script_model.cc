#include "models/script_model.h"

#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <torch/csrc/jit/serialization/import.h>
#include <torch/torch.h>

#include "models/loss.h"
#include "models/model_state.h"
#include "models/script_arrivals.h"

namespace pstrain::models {
namespace {

std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The wire and the server's optimizer read a key's storage as one block.
torch::Tensor Contiguous(torch::Tensor t) {
  if (!t.is_contiguous())
    t.set_data(t.contiguous());  // same tensor: the module sees the change
  return t;
}

// Registers `from`'s own parameters and buffers in `to` under their names,
// then mirrors its children the same way, depth first: state_dict's order.
Status Mirror(const torch::jit::Module& from, torch::nn::Module& to,
              const std::string& prefix, const std::string& file) {
  for (const auto& p : from.named_parameters(/*recurse=*/false)) {
    if (p.value.scalar_type() != at::kFloat) {
      return InvalidArgument(file + ": parameter '" + prefix + p.name +
                             "' is " + DTypeText(p.value.scalar_type()) +
                             "; expected float32 (call .float() before "
                             "scripting)");
    }
    to.register_parameter(p.name, Contiguous(p.value), /*requires_grad=*/true);
  }
  for (const auto& b : from.named_buffers(/*recurse=*/false)) {
    const auto t = b.value.scalar_type();
    if (t != at::kFloat && t != at::kLong) {
      return InvalidArgument(file + ": buffer '" + prefix + b.name + "' is " +
                             DTypeText(t) + "; expected float32 or int64");
    }
    to.register_buffer(b.name, Contiguous(b.value));
  }
  for (const auto& c : from.named_children()) {
    auto child = to.register_module(
        c.name, std::make_shared<torch::nn::Module>("ScriptSubmodule"));
    PS_RETURN_IF_ERROR(Mirror(c.value, *child, prefix + c.name + ".", file));
  }
  return Status::Ok();
}

}  // namespace

ScriptModel::ScriptModel(torch::jit::Module module)
    : module_(std::move(module)) {}

Result<std::shared_ptr<ScriptModel>> ScriptModel::Load(
    const std::string& bytes, const std::string& name) {
  torch::jit::Module module;
  try {
    std::istringstream in(bytes);
    module = torch::jit::load(in, torch::Device(torch::kCPU));
  } catch (const c10::Error& e) {
    return InvalidArgument(
        name +
        ": not a TorchScript module (torch.jit.script(model).save(PATH) "
        "writes one): " +
        FirstLine(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return InvalidArgument(
        name + ": not a TorchScript module: " + FirstLine(e.what()));
  }
  if (!module.find_method("forward"))
    return InvalidArgument(name + ": the module has no forward method");
  std::shared_ptr<ScriptModel> model(new ScriptModel(std::move(module)));
  PS_RETURN_IF_ERROR(Mirror(model->module_, *model, "", name));
  try {
    model->train(true);
  } catch (const c10::Error& e) {  // a module of C++'s without `training`
    return InvalidArgument(name + ": the module cannot switch to train(): " +
                           FirstLine(e.what_without_backtrace()));
  }
  model->InstrumentForward();
  return model;
}

// Each parameter's key, so that forward waits for each where it reads it;
// a forward that cannot be traced waits for every key before it runs.
void ScriptModel::InstrumentForward() {
  std::unordered_map<const c10::TensorImpl*, size_t> ends;
  const std::vector<torch::Tensor> keys = StateValues(*this);
  for (size_t k = 0; k < keys.size(); ++k)
    ends.emplace(keys[k].unsafeGetTensorImpl(), k + 1);
  try {
    per_key_ = InstrumentArrivals(module_, [&](const at::Tensor& t) {
      auto it = ends.find(t.unsafeGetTensorImpl());
      return it == ends.end() ? size_t{0} : it->second;
    });
  } catch (const std::exception&) {  // c10::Error, jit::ErrorReport
    per_key_ = false;  // forward waits for all: what it computes is the same
  }
}

torch::Tensor ScriptModel::forward(torch::Tensor x) {
  if (!per_key_)
    AwaitAll();
  ArrivalScope scope(&await());
  c10::IValue out = module_.forward({std::move(x)});
  if (!out.isTensor()) {
    throw std::runtime_error("the module's forward returned a " +
                             out.tagKind() + ", expected one Tensor");
  }
  return out.toTensor();
}

void ScriptModel::train(bool on) {
  torch::nn::Module::train(on);
  module_.train(on);
}

}  // namespace pstrain::models
