#include "models/model_zoo.h"

#include "models/convnet.h"
#include "models/mlp.h"
#include "models/net.h"

namespace pstrain::models {
namespace {

struct ZooEntry {
  const char* name;
  std::shared_ptr<Model> (*make)();
};

template <typename T>
std::shared_ptr<Model> Make() {
  return std::make_shared<T>();
}

constexpr ZooEntry kZoo[] = {
    {"net", &Make<Net>},
    {"convnet", &Make<ConvNet>},
    {"mlp", &Make<Mlp>},
};

std::string JoinedNames() {
  std::string joined;
  for (const ZooEntry& entry : kZoo) {
    if (!joined.empty())
      joined += ", ";
    joined += entry.name;
  }
  return joined;
}

}  // namespace

Result<std::shared_ptr<Model>> MakeModel(const std::string& name,
                                         const InputShape&) {
  for (const ZooEntry& entry : kZoo) {
    if (name == entry.name)
      return entry.make();
  }
  return InvalidArgument("unknown model '" + name +
                         "'; expected one of: " + JoinedNames());
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const ZooEntry& entry : kZoo)
    names.emplace_back(entry.name);
  return names;
}

}  // namespace pstrain::models
