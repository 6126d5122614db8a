#include "ps/checkpoint_rotation.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "ps/checkpoint.h"

namespace pstrain::ps {
namespace {

namespace fs = std::filesystem;

// "dir/model.pt" -> {"dir/model", ".pt"}.
std::pair<std::string, std::string> StemAndExtension(const std::string& base) {
  for (const char* ext : {".pt", ".pth"}) {
    const std::string e = ext;
    if (base.size() > e.size() && base.compare(base.size() - e.size(), e.size(), e) == 0) {
      return {base.substr(0, base.size() - e.size()), e};
    }
  }
  return {base, ".pt"};
}

// The version in "model-v000000120.pt", if `name` is one of base's.
std::optional<uint64_t> VersionOf(const std::string& stem_name, const std::string& ext,
                                  const std::string& name) {
  const std::string prefix = stem_name + "-v";
  if (name.size() != prefix.size() + 9 + ext.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - ext.size(), ext.size(), ext) != 0) {
    return std::nullopt;
  }
  const std::string digits = name.substr(prefix.size(), 9);
  if (!std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return std::strtoull(digits.c_str(), nullptr, 10);
}

bool Complete(const std::string& path, uint64_t version) {
  std::error_code ec;
  if (!fs::exists(OptimizerStatePath(path), ec)) return false;
  auto meta = LoadCheckpointMeta(path);
  if (!meta.ok() || meta->value("version", uint64_t{0} - 1) != version) return false;
  return LoadCheckpointTensors(path).ok();
}

}  // namespace

Result<CheckpointEvery> ParseCheckpointEvery(const std::string& text) {
  CheckpointEvery every;
  const bool seconds = !text.empty() && text.back() == 's';
  const std::string number = seconds ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  const bool parsed = !number.empty() && end == number.c_str() + number.size();
  if (parsed && seconds && v > 0) {
    every.time = std::chrono::milliseconds(static_cast<int64_t>(v * 1000));
    return every;
  }
  if (parsed && !seconds && v >= 1 && v == static_cast<double>(static_cast<uint64_t>(v))) {
    every.steps = static_cast<uint64_t>(v);
    return every;
  }
  return InvalidArgument("--checkpoint_every '" + text +
                         "': expected N (steps, >= 1) or Ns (seconds, > 0)");
}

std::string VersionedCheckpointPath(const std::string& base, uint64_t version) {
  auto [stem, ext] = StemAndExtension(base);
  char digits[32];
  std::snprintf(digits, sizeof(digits), "%09llu", static_cast<unsigned long long>(version));
  return stem + "-v" + digits + ext;
}

std::vector<std::pair<uint64_t, std::string>> CompleteCheckpoints(const std::string& base) {
  auto [stem, ext] = StemAndExtension(base);
  const fs::path stem_path(stem);
  const fs::path dir = stem_path.has_parent_path() ? stem_path.parent_path() : fs::path(".");
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto v = VersionOf(stem_path.filename().string(), ext, entry.path().filename().string());
    const std::string path = (dir / entry.path().filename()).string();
    if (v && Complete(path, *v)) found.emplace_back(*v, path);
  }
  std::sort(found.begin(), found.end());
  return found;
}

CheckpointRotation::CheckpointRotation(std::string base, CheckpointEvery every, int keep)
    : base_(std::move(base)), every_(every), keep_(std::max(1, keep)) {}

bool CheckpointRotation::Due(uint64_t version,
                             std::chrono::steady_clock::time_point now) const {
  if (version == last_version_) return false;
  if (every_.steps > 0 && version / every_.steps > last_version_ / every_.steps) return true;
  return every_.time.count() > 0 && now - last_time_ >= every_.time;
}

Status CheckpointRotation::Saved(uint64_t version,
                                 std::chrono::steady_clock::time_point now) {
  last_version_ = version;
  last_time_ = now;
  auto complete = CompleteCheckpoints(base_);
  if (complete.size() <= static_cast<size_t>(keep_)) return Status::Ok();
  complete.resize(complete.size() - keep_);  // the ones to remove
  for (const auto& [v, path] : complete) {
    for (const std::string& p : {path, CheckpointMetaPath(path), OptimizerStatePath(path)}) {
      std::error_code ec;
      fs::remove(p, ec);
      if (ec) return IOError("cannot remove old checkpoint " + p + ": " + ec.message());
    }
  }
  return Status::Ok();
}

}  // namespace pstrain::ps
