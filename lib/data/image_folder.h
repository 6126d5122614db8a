#pragma once
// ImageFolder: torchvision's ImageFolder over the imagenette2 layout,
// DIR/train/<class>/... (Split::kTrain) and DIR/val/<class>/...
// (Split::kTest). Classes are the sorted names of the subfolders, labels
// their indices; a class's files are every .jpg, .jpeg or .png
// (case-insensitive) under its folder, subfolders included, sorted by
// folder and then name. Holds the file list only; Get reads, decodes and
// transforms each sample (data/transforms.h: RandomResizedCrop + flip for
// train, Resize + CenterCrop for test, ImageNet's normalization). A JPEG is
// decoded with DCT scaling (data/image_decode.h) only as far as the image
// keeps at least the pixels the output needs: for train the crop, drawn
// first from the header's size, keeps >= image_size per side
// (NeededForCrop); for test the image keeps >= the Resize target. This is
// stricter than "the shorter side stays >= image_size": a crop is never
// resampled from fewer than image_size pixels per side.
//
// Thread-safe: Get may run on several threads at once. A file that fails to
// read or decode is reported once (SourceOptions::on_corrupt), remembered,
// and from then on left out of every batch without being read again.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/source.h"

namespace pstrain::data {

class ImageFolder : public Source {
 public:
  /// Lists `options.data_dir`/train and /val (both, whichever `split` is)
  /// and keeps the file list of `split`. Errors, one line naming the
  /// path: kInvalidArgument for an empty data_dir or image_size outside
  /// 1..4096; kNotFound for a missing folder; kCorruption for a folder
  /// with no class subfolders, a class folder with no image files, or
  /// classes that differ between train and val (naming both folders and
  /// the first class that is in one only); kIOError for a listing error.
  static Result<std::unique_ptr<ImageFolder>> Open(const SourceOptions& options,
                                                   Split split);

  ImageFolder(const ImageFolder&) = delete;
  ImageFolder& operator=(const ImageFolder&) = delete;

  /// Files of the split, corrupt ones included.
  int64_t size() const override;
  /// {3, image_size, image_size, classes().size()}.
  SourceShape shape() const override;
  /// Images float32 [b', 3, image_size, image_size], labels int64 [b'].
  Batch Get(const torch::Tensor& indices, int64_t epoch) const override;

  /// The sorted class names; label i is classes()[i].
  const std::vector<std::string>& classes() const { return classes_; }
  /// The path of sample i, 0 <= i < size().
  const std::string& path(int64_t i) const { return files_[i]; }
  /// The label of sample i, 0 <= i < size().
  int64_t label(int64_t i) const { return labels_[i]; }

 private:
  ImageFolder(const SourceOptions& options, Split split,
              std::vector<std::string> classes, std::vector<std::string> files,
              std::vector<int64_t> labels);

  // Writes sample i, transformed, to out (float32 [3, S, S]).
  Status Transform(int64_t i, int64_t epoch, float* out) const;
  // Remembers that sample i is corrupt; reports it the first time.
  void MarkCorrupt(int64_t i, const Status& why) const;

  SourceOptions options_;
  Split split_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
  std::unique_ptr<std::atomic<bool>[]> corrupt_;
};

}  // namespace pstrain::data
