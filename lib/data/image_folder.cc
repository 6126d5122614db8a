#include "data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include <torch/torch.h>

#include "data/image_decode.h"
#include "data/source_util.h"
#include "data/transforms.h"

namespace pstrain::data {
namespace {

namespace fs = std::filesystem;
using internal::JoinPath;

bool IsImageFile(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

Status ListingError(const std::string& dir, const std::error_code& ec) {
  return IOError(dir + ": " + ec.message());
}

// The sorted names of the subfolders of `dir` (symbolic links followed).
Result<std::vector<std::string>> ListClasses(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return NotFound(dir + ": no such folder");
  std::vector<std::string> names;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec))
      names.push_back(it->path().filename().string());
  }
  if (ec)
    return ListingError(dir, ec);
  if (names.empty()) {
    return Corruption(dir + ": no class folders (expected " + dir +
                      "/<class>/<image>)");
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The image files under `dir`, sorted by folder, then name (os.walk's
// order as torchvision sorts it).
Result<std::vector<std::string>> ListImages(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(
      dir, fs::directory_options::follow_directory_symlink, ec);
  for (const fs::recursive_directory_iterator end; !ec && it != end;
       it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && IsImageFile(it->path())) {
      found.emplace_back(it->path().parent_path().string(),
                         it->path().filename().string());
    }
  }
  if (ec)
    return ListingError(dir, ec);
  if (found.empty())
    return Corruption(dir + ": no .jpg, .jpeg or .png files");
  std::sort(found.begin(), found.end());
  std::vector<std::string> files;
  files.reserve(found.size());
  for (const auto& [folder, name] : found)
    files.push_back(folder + "/" + name);
  return files;
}

Status SameClasses(const std::string& train_dir,
                   const std::vector<std::string>& train,
                   const std::string& val_dir,
                   const std::vector<std::string>& val) {
  std::vector<std::string> diff;
  std::set_symmetric_difference(train.begin(), train.end(), val.begin(),
                                val.end(), std::back_inserter(diff));
  if (diff.empty())
    return Status::Ok();
  const bool in_train = std::binary_search(train.begin(), train.end(), diff[0]);
  return Corruption(train_dir + " and " + val_dir +
                    " hold different classes: '" + diff[0] + "' is in " +
                    (in_train ? train_dir : val_dir) + " only");
}

}  // namespace

Result<std::unique_ptr<ImageFolder>> ImageFolder::Open(
    const SourceOptions& options, Split split) {
  if (options.data_dir.empty()) {
    return InvalidArgument(
        "imagefolder needs --data_dir (a folder holding train/<class>/ and "
        "val/<class>/)");
  }
  if (options.image_size < 1 || options.image_size > 4096) {
    return InvalidArgument("--image_size " +
                           std::to_string(options.image_size) +
                           " is outside 1..4096");
  }
  std::error_code ec;
  if (!fs::is_directory(options.data_dir, ec))
    return NotFound(options.data_dir + ": no such folder");
  const std::string train_dir = JoinPath(options.data_dir, "train");
  const std::string val_dir = JoinPath(options.data_dir, "val");
  PS_ASSIGN_OR_RETURN(std::vector<std::string> train, ListClasses(train_dir));
  PS_ASSIGN_OR_RETURN(std::vector<std::string> val, ListClasses(val_dir));
  PS_RETURN_IF_ERROR(SameClasses(train_dir, train, val_dir, val));
  const std::string& dir = split == Split::kTrain ? train_dir : val_dir;
  std::vector<std::string> files;
  std::vector<int64_t> labels;
  for (size_t c = 0; c < train.size(); ++c) {
    PS_ASSIGN_OR_RETURN(std::vector<std::string> images,
                        ListImages(JoinPath(dir, train[c])));
    for (std::string& f : images)
      files.push_back(std::move(f));
    labels.resize(files.size(), static_cast<int64_t>(c));
  }
  return std::unique_ptr<ImageFolder>(new ImageFolder(
      options, split, std::move(train), std::move(files), std::move(labels)));
}

ImageFolder::ImageFolder(const SourceOptions& options, Split split,
                         std::vector<std::string> classes,
                         std::vector<std::string> files,
                         std::vector<int64_t> labels)
    : options_(options),
      split_(split),
      classes_(std::move(classes)),
      files_(std::move(files)),
      labels_(std::move(labels)),
      corrupt_(new std::atomic<bool>[files_.size()]) {
  for (size_t i = 0; i < files_.size(); ++i)
    corrupt_[i].store(false, std::memory_order_relaxed);
}

int64_t ImageFolder::size() const {
  return static_cast<int64_t>(files_.size());
}

SourceShape ImageFolder::shape() const {
  return {3, options_.image_size, options_.image_size,
          static_cast<int64_t>(classes_.size())};
}

Status ImageFolder::Transform(int64_t i, int64_t epoch, float* out) const {
  const std::string& path = files_[i];
  const int64_t size = options_.image_size;
  PS_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  PS_ASSIGN_OR_RETURN(ImageSize full, PeekImageSize(path, bytes));
  if (split_ == Split::kTrain) {
    at::Generator gen = SampleGenerator(options_.seed, epoch, i);
    const CropBox box = RandomResizedCropBox(full, gen);
    const bool flip = RandomFlip(gen);
    PS_ASSIGN_OR_RETURN(
        Image image, DecodeImage(path, bytes, NeededForCrop(full, box, size)));
    ResizedCrop(image, box, size, flip, kImageNetNormalization, out);
    return Status::Ok();
  }
  const int64_t resize = EvalResizeSide(size);
  PS_ASSIGN_OR_RETURN(Image image,
                      DecodeImage(path, bytes, ResizedSize(full, resize)));
  ResizeCenterCrop(image, resize, size, kImageNetNormalization, out);
  return Status::Ok();
}

void ImageFolder::MarkCorrupt(int64_t i, const Status& why) const {
  if (corrupt_[i].exchange(true))
    return;  // reported already, by this thread or another
  if (options_.on_corrupt)
    options_.on_corrupt(why);
  else
    internal::LogCorrupt(why);
}

Batch ImageFolder::Get(const torch::Tensor& indices, int64_t epoch) const {
  const torch::Tensor idx = internal::CheckedIndices(indices, size());
  const int64_t b = idx.size(0);
  const int64_t side = options_.image_size;
  Batch batch;
  batch.images = torch::empty({b, 3, side, side}, torch::kFloat32);
  batch.labels = torch::empty({b}, torch::kInt64);
  const int64_t* ids = idx.data_ptr<int64_t>();
  float* images = batch.images.data_ptr<float>();
  int64_t* labels = batch.labels.data_ptr<int64_t>();
  int64_t kept = 0;
  for (int64_t j = 0; j < b; ++j) {
    const int64_t i = ids[j];
    if (corrupt_[i].load(std::memory_order_relaxed)) {
      ++batch.skipped;
      continue;
    }
    Status status = Transform(i, epoch, images + kept * 3 * side * side);
    if (!status.ok()) {
      MarkCorrupt(i, status);
      ++batch.skipped;
      continue;
    }
    labels[kept++] = labels_[i];
  }
  if (kept < b) {
    batch.images = batch.images.narrow(0, 0, kept);
    batch.labels = batch.labels.narrow(0, 0, kept);
  }
  return batch;
}

}  // namespace pstrain::data
