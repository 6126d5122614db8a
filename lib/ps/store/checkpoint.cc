#include "ps/store/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <ATen/core/Dict.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

namespace pstrain::ps {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status Errno(const std::string& what, const std::string& path) {
  return IOError("cannot " + what + " " + path + ": " + std::strerror(errno));
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return NotFound("cannot open " + path + ": " + std::strerror(errno));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::string CheckpointMetaPath(const std::string& path) {
  for (const char* ext : {".pt", ".pth"}) {
    if (EndsWith(path, ext)) {
      return path.substr(0, path.size() - std::strlen(ext)) + ".json";
    }
  }
  return path + ".json";
}

std::string OptimizerStatePath(const std::string& path, int server,
                               int num_servers) {
  const std::string suffix = num_servers > 1
                                 ? ".optim-" + std::to_string(server) + "-of-" +
                                       std::to_string(num_servers) + ".pt"
                                 : ".optim.pt";
  for (const char* ext : {".pt", ".pth"}) {
    if (EndsWith(path, ext)) {
      return path.substr(0, path.size() - std::strlen(ext)) + suffix;
    }
  }
  return path + suffix;
}

Result<std::string> SerializeOptimizerState(
    const std::vector<torch::optim::Optimizer*>& optimizers) {
  std::ostringstream bytes;
  try {
    torch::serialize::OutputArchive archive;
    if (optimizers.size() == 1) {
      optimizers[0]->save(archive);
    } else {
      for (size_t i = 0; i < optimizers.size(); ++i) {
        torch::serialize::OutputArchive group;
        optimizers[i]->save(group);
        archive.write("group" + std::to_string(i), group);
      }
    }
    archive.save_to(bytes);
  } catch (const std::exception& e) {
    std::string what = e.what();
    return IOError("cannot serialize the optimizer state: " +
                   what.substr(0, what.find('\n')));
  }
  return bytes.str();
}

Status SaveOptimizerState(
    const std::string& checkpoint_path,
    const std::vector<torch::optim::Optimizer*>& optimizers, int server,
    int num_servers) {
  const std::string path =
      OptimizerStatePath(checkpoint_path, server, num_servers);
  auto bytes = SerializeOptimizerState(optimizers);
  if (!bytes.ok())
    return bytes.status().WithContext(path);
  return WriteFileAtomically(path, *bytes);
}

Status LoadOptimizerState(
    const std::string& checkpoint_path,
    const std::vector<torch::optim::Optimizer*>& optimizers, int server,
    int num_servers) {
  const std::string path =
      OptimizerStatePath(checkpoint_path, server, num_servers);
  PS_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return LoadOptimizerStateBytes(bytes, optimizers, path);
}

Status LoadOptimizerStateBytes(
    const std::string& bytes,
    const std::vector<torch::optim::Optimizer*>& optimizers,
    const std::string& source) {
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    if (optimizers.size() == 1) {
      optimizers[0]->load(archive);
    } else {
      for (size_t i = 0; i < optimizers.size(); ++i) {
        torch::serialize::InputArchive group;
        archive.read("group" + std::to_string(i), group);
        optimizers[i]->load(group);
      }
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    return Corruption(source + ": not this optimizer's state (" +
                      what.substr(0, what.find('\n')) + ")");
  }
  return Status::Ok();
}

Status LoadIntoParameters(
    const NamedTensors& tensors,
    const std::vector<std::pair<std::string, at::Tensor>>& named_params,
    const std::string& path) {
  std::map<std::string, at::Tensor> by_name(tensors.begin(), tensors.end());
  torch::NoGradGuard no_grad;
  for (const auto& [name, param] : named_params) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return InvalidArgument(path + " has no parameter '" + name + "'");
    }
    if (!it->second.sizes().equals(param.sizes())) {
      return InvalidArgument(path + ": '" + name + "' has another shape");
    }
    // A const Tensor handle still writes through to the shared storage.
    at::Tensor dst = param;
    dst.copy_(it->second);
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Errno("create", tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      Status s = Errno("write", tmp);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    return Errno("sync", tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Errno("rename", tmp);
  return Status::Ok();
}

Status SaveCheckpoint(const std::string& path, const NamedTensors& tensors,
                      const nlohmann::json& meta) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, t] : tensors)
    dict.insert(name, t.detach().cpu());
  std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  PS_RETURN_IF_ERROR(
      WriteFileAtomically(path, std::string(bytes.begin(), bytes.end())));
  return WriteFileAtomically(CheckpointMetaPath(path), meta.dump(2) + "\n");
}

Status SaveJobCheckpoint(const std::string& path, const NamedTensors& tensors,
                         const std::vector<std::string>& optimizer_states,
                         const nlohmann::json& meta) {
  const int n = static_cast<int>(optimizer_states.size());
  for (int s = 0; s < n; ++s) {
    PS_RETURN_IF_ERROR(WriteFileAtomically(OptimizerStatePath(path, s, n),
                                           optimizer_states[s]));
  }
  return SaveCheckpoint(path, tensors, meta);
}

NamedTensors WithAliases(
    NamedTensors tensors,
    const std::vector<std::pair<std::string, std::string>>& aliases) {
  for (const auto& [alias, name] : aliases) {
    auto it = std::find_if(tensors.begin(), tensors.end(),
                           [&](const auto& t) { return t.first == name; });
    if (it != tensors.end())
      tensors.insert(it + 1, {alias, it->second});
  }
  return tensors;
}

Result<NamedTensors> LoadCheckpointTensors(const std::string& path) {
  PS_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  NamedTensors out;
  try {
    c10::IValue v =
        torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    if (!v.isGenericDict()) {
      return Corruption(path + ": expected a dict of name to tensor");
    }
    for (const auto& entry : v.toGenericDict()) {
      if (!entry.key().isString() || !entry.value().isTensor()) {
        return Corruption(path + ": expected a dict of name to tensor");
      }
      out.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    return Corruption(path + ": not a checkpoint (" +
                      what.substr(0, what.find('\n')) + ")");
  }
  return out;
}

Result<nlohmann::json> LoadCheckpointMeta(const std::string& checkpoint_path) {
  const std::string path = CheckpointMetaPath(checkpoint_path);
  PS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Corruption(path + ": not valid JSON");
  return j;
}

}  // namespace pstrain::ps
