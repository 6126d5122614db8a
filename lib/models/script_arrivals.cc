#include "models/script_arrivals.h"

#include <unordered_map>
#include <vector>

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/library.h>

namespace pstrain::models {
namespace {

thread_local const std::function<void(size_t)>* tls_wait = nullptr;

void Wait(int64_t end) {
  if (tls_wait != nullptr && *tls_wait)
    (*tls_wait)(static_cast<size_t>(end));
}

at::Tensor Arrive(const at::Tensor& self, int64_t end) {
  Wait(end);
  return self;
}

// An attribute that may be None (a convolution's bias).
c10::optional<at::Tensor> ArriveOptional(const c10::optional<at::Tensor>& self,
                                         int64_t end) {
  Wait(end);
  return self;
}

// Composite operators: autograd records nothing of them, and what they
// return is their input, so gradients reach the parameter itself.
TORCH_LIBRARY(pstrain, m) {
  m.def("arrive(Tensor(a) self, int end) -> Tensor(a)", &Arrive);
  m.def("arrive_optional(Tensor(a)? self, int end) -> Tensor(a)?",
        &ArriveOptional);
}

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

// What a rewrite needs as it walks the graph: the object each value
// holds (self, submodules), and the reads to wrap, in graph order.
struct Walk {
  std::unordered_map<const Value*, c10::IValue> objects;
  std::vector<std::pair<Value*, size_t>> reads;  // (tensor read, end)
  bool ok = true;
};

void Visit(Block* block, const std::function<size_t(const at::Tensor&)>& end_of,
           Walk* walk) {
  for (Node* node : block->nodes()) {
    for (Block* inner : node->blocks())
      Visit(inner, end_of, walk);
    if (node->kind() != c10::prim::GetAttr)
      continue;
    auto owner = walk->objects.find(node->input());
    if (owner == walk->objects.end()) {
      walk->ok = false;  // an attribute of an object we do not know
      return;
    }
    const c10::IValue attr =
        owner->second.toObjectRef().getAttr(node->s(c10::attr::name));
    if (attr.isObject()) {
      walk->objects[node->output()] = attr;
    } else if (attr.isTensor()) {
      const size_t end = end_of(attr.toTensor());
      const c10::TypeKind kind = node->output()->type()->kind();
      if (end > 0 && (kind == c10::TypeKind::TensorType ||
                      kind == c10::TypeKind::OptionalType)) {
        walk->reads.emplace_back(node->output(), end);
      }
    }
  }
}

}  // namespace

bool InstrumentArrivals(
    torch::jit::Module& module,
    const std::function<size_t(const at::Tensor&)>& end_of) {
  // The function's own graph, changed in place: its executor is made from
  // it on the first call.
  std::shared_ptr<torch::jit::Graph> graph =
      torch::jit::toGraphFunction(module.get_method("forward").function())
          .graph();
  torch::jit::Inline(*graph);  // the same computation, calls spelled out
  Walk walk;
  walk.objects[graph->inputs().at(0)] = module._ivalue();
  Visit(graph->block(), end_of, &walk);
  if (!walk.ok)
    return false;  // inlined, but otherwise as it was
  const c10::Symbol arrive = c10::Symbol::fromQualString("pstrain::arrive");
  const c10::Symbol arrive_optional =
      c10::Symbol::fromQualString("pstrain::arrive_optional");
  for (const auto& [read, end] : walk.reads) {
    torch::jit::WithInsertPoint at(read->node()->next());
    const bool optional = read->type()->kind() == c10::TypeKind::OptionalType;
    Value* arrived = graph->insert(optional ? arrive_optional : arrive,
                                   {read, static_cast<int64_t>(end)});
    read->replaceAllUsesAfterNodeWith(arrived->node(), arrived);
  }
  return true;
}

ArrivalScope::ArrivalScope(const std::function<void(size_t)>* wait)
    : previous_(tls_wait) {
  tls_wait = wait;
}

ArrivalScope::~ArrivalScope() {
  tls_wait = previous_;
}

}  // namespace pstrain::models
