#include "ps/rank/checkpoint_rotation.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "ps/store/checkpoint.h"

namespace pstrain::ps {
namespace {

namespace fs = std::filesystem;

// "dir/model.pt" -> {"dir/model", ".pt"}.
std::pair<std::string, std::string> StemAndExtension(const std::string& base) {
  for (const char* ext : {".pt", ".pth"}) {
    const std::string e = ext;
    if (base.size() > e.size() &&
        base.compare(base.size() - e.size(), e.size(), e) == 0) {
      return {base.substr(0, base.size() - e.size()), e};
    }
  }
  return {base, ".pt"};
}

// The version in "model-v000000120.pt", if `name` is one of base's.
std::optional<uint64_t> VersionOf(const std::string& stem_name,
                                  const std::string& ext,
                                  const std::string& name) {
  const std::string prefix = stem_name + "-v";
  if (name.size() != prefix.size() + 9 + ext.size() ||
      name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - ext.size(), ext.size(), ext) != 0) {
    return std::nullopt;
  }
  const std::string digits = name.substr(prefix.size(), 9);
  if (!std::all_of(digits.begin(), digits.end(), ::isdigit))
    return std::nullopt;
  return std::strtoull(digits.c_str(), nullptr, 10);
}

// How many servers' optimizer states the checkpoint has: its job's.
int NumServers(const nlohmann::json& meta) {
  auto job = meta.find("job");
  if (job == meta.end() || !job->is_object())
    return 1;
  auto n = job->find("num_servers");
  return n != job->end() && n->is_number_integer() ? std::max(1, n->get<int>())
                                                   : 1;
}

std::vector<std::string> Parts(const std::string& path, int num_servers) {
  std::vector<std::string> parts = {path, CheckpointMetaPath(path)};
  for (int s = 0; s < num_servers; ++s) {
    parts.push_back(OptimizerStatePath(path, s, num_servers));
  }
  return parts;
}

bool Complete(const std::string& path, uint64_t version) {
  auto meta = LoadCheckpointMeta(path);
  if (!meta.ok() || !meta->is_object() ||
      meta->value("version", uint64_t{0} - 1) != version) {
    return false;
  }
  std::error_code ec;
  for (const std::string& part : Parts(path, NumServers(*meta))) {
    if (!fs::exists(part, ec))
      return false;
  }
  return LoadCheckpointTensors(path).ok();
}

}  // namespace

std::string VersionedCheckpointPath(const std::string& base, uint64_t version) {
  auto [stem, ext] = StemAndExtension(base);
  char digits[32];
  std::snprintf(digits, sizeof(digits), "%09llu",
                static_cast<unsigned long long>(version));
  return stem + "-v" + digits + ext;
}

std::vector<std::pair<uint64_t, std::string>> CompleteCheckpoints(
    const std::string& base) {
  auto [stem, ext] = StemAndExtension(base);
  const fs::path stem_path(stem);
  const fs::path dir =
      stem_path.has_parent_path() ? stem_path.parent_path() : fs::path(".");
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto v = VersionOf(stem_path.filename().string(), ext,
                       entry.path().filename().string());
    const std::string path = (dir / entry.path().filename()).string();
    if (v && Complete(path, *v))
      found.emplace_back(*v, path);
  }
  std::sort(found.begin(), found.end());
  return found;
}

Status RemoveOldCheckpoints(const std::string& base, int keep) {
  auto complete = CompleteCheckpoints(base);
  keep = std::max(1, keep);
  if (complete.size() <= static_cast<size_t>(keep))
    return Status::Ok();
  complete.resize(complete.size() - keep);  // the ones to remove
  for (const auto& [v, path] : complete) {
    auto meta = LoadCheckpointMeta(path);
    // The JSON first: what is left of a checkpoint without it is incomplete.
    std::vector<std::string> parts =
        Parts(path, meta.ok() ? NumServers(*meta) : 1);
    std::swap(parts[0], parts[1]);
    for (const std::string& p : parts) {
      std::error_code ec;
      fs::remove(p, ec);
      if (ec)
        return IOError("cannot remove old checkpoint " + p + ": " +
                       ec.message());
    }
  }
  return Status::Ok();
}

}  // namespace pstrain::ps
