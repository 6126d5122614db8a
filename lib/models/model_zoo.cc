#include "models/model_zoo.h"

#include <string>

#include <c10/util/Exception.h>

#include "models/convnet.h"
#include "models/mlp.h"
#include "models/net.h"
#include "models/resnet.h"

namespace pstrain::models {
namespace {

using Maker = std::shared_ptr<Model> (*)(const InputShape&,
                                         const LstmLmOptions&);

struct ZooEntry {
  const char* name;
  Maker make;
  bool any_shape;  // false: takes kMnistShape only
};

// The shape net, convnet and mlp were written for: MNIST's.
constexpr InputShape kMnistShape{1, 28, 10};

template <typename T>
std::shared_ptr<Model> Make(const InputShape&, const LstmLmOptions&) {
  return std::make_shared<T>();
}

template <std::shared_ptr<ResNet> (*F)(const InputShape&)>
std::shared_ptr<Model> MakeResNet(const InputShape& input,
                                  const LstmLmOptions&) {
  return F(input);
}

std::shared_ptr<Model> MakeLstmLm(const InputShape&, const LstmLmOptions& lm) {
  return std::make_shared<LstmLm>(lm);
}

constexpr ZooEntry kZoo[] = {
    {"net", &Make<Net>, false},
    {"convnet", &Make<ConvNet>, false},
    {"mlp", &Make<Mlp>, false},
    {"resnet18", &MakeResNet<&MakeResNet18>, true},
    {"resnet34", &MakeResNet<&MakeResNet34>, true},
    {"resnet50", &MakeResNet<&MakeResNet50>, true},
    {"lstm_lm", &MakeLstmLm, true},  // takes token ids, not images
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

// "3x32x32 in 10 classes"
std::string Describe(const InputShape& s) {
  const std::string size = std::to_string(s.image_size);
  return std::to_string(s.channels) + "x" + size + "x" + size + " in " +
         std::to_string(s.num_classes) + " classes";
}

Status CheckShape(const ZooEntry& entry, const InputShape& input) {
  if (!entry.any_shape) {
    if (input.channels == kMnistShape.channels &&
        input.image_size == kMnistShape.image_size &&
        input.num_classes == kMnistShape.num_classes)
      return Status::Ok();
    return InvalidArgument(std::string("model '") + entry.name + "' takes " +
                           Describe(kMnistShape) + "; the data set has " +
                           Describe(input) +
                           " (use resnet18, resnet34 or resnet50)");
  }
  if (input.channels >= 1 && input.image_size >= 1 && input.num_classes >= 1)
    return Status::Ok();
  return InvalidArgument(std::string("model '") + entry.name +
                         "' needs at least 1 channel, 1 pixel and 1 class; "
                         "got " +
                         Describe(input));
}

}  // namespace

Result<std::shared_ptr<Model>> MakeModel(const std::string& name,
                                         const InputShape& input,
                                         const LstmLmOptions& lm) {
  for (const ZooEntry& entry : kZoo) {
    if (name != entry.name)
      continue;
    if (entry.make != &MakeLstmLm)
      PS_RETURN_IF_ERROR(CheckShape(entry, input));
    try {
      return entry.make(input, lm);
    } catch (const c10::Error& e) {
      return InvalidArgument("cannot build model '" + name + "' for " +
                             Describe(input) + ": " +
                             e.what_without_backtrace());
    }
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

bool IsZooModel(const std::string& name) {
  for (const ZooEntry& entry : kZoo) {
    if (name == entry.name)
      return true;
  }
  return false;
}

}  // namespace pstrain::models
