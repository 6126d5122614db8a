#pragma once
// CriteoStream: batches of Criteo click-log lines (data/criteo_line.h),
// read as a stream from plain or gzip files (data/line_file.h), one file
// open at a time, so a data set of any size costs a buffer and a batch.
//
// Which lines are whose (CriteoSplitOf):
//   - a folder of day files, day_0 .. day_N (each plain or .gz), as the
//     Terabyte set ships: the last day is held out (the test split), the
//     others train, as the DLRM reference does with day 23;
//   - else a folder with train.txt (or train.txt.gz), as the Kaggle set
//     ships: line i of it is held out when i % 10 == 9, the other nine of
//     every ten train (the Kaggle set's test.txt has no labels).
// Of its split's lines, worker w of W reads the k-th when k % W == w, so
// the workers' lines differ and together are the split's.
//
// A bad line (criteo_line.h's CriteoBad) is skipped and counted, never
// trained on; a truncated gzip file ends where it breaks, its lines before
// that read, and is counted. Not thread-safe; one reader.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "data/criteo_line.h"
#include "util/result.h"

namespace pstrain::data {

class LineFile;

/// The files of one split and the rule that picks its lines from them.
struct CriteoSplit {
  std::vector<std::string> files;  // read in this order
  /// 0: every line; else line i (counted over the files) is this split's
  /// when (i % every == every - 1) == held_out.
  int every = 0;
  bool held_out = false;
};

/// The train or test split of the Criteo data set in `data_dir`, by the
/// rules above. kNotFound naming the folder when it has neither day files
/// nor train.txt[.gz]; kInvalidArgument for a folder of one day file
/// (nothing would train, or nothing would be held out).
Result<CriteoSplit> CriteoSplitOf(const std::string& data_dir, bool test);

/// One batch: b samples (b <= batch_size; the last of a pass may be short).
struct CriteoBatch {
  at::Tensor dense;   // float32 [b, 13], log(1 + max(x, 0))
  at::Tensor rows;    // int64 [b, 26], row of each feature's table
  at::Tensor labels;  // float32 [b], 0 or 1
};

/// What a stream has met, over every pass.
struct CriteoCounts {
  int64_t lines = 0;    // read, this worker's and the others'
  int64_t samples = 0;  // this worker's, trained on
  /// This worker's lines skipped, by CriteoBad (index 0 unused).
  std::array<int64_t, kCriteoBadKinds> bad{};
  int64_t truncated_files = 0;  // gzip files that ended early
  int64_t bad_lines() const;
};

class CriteoStream {
 public:
  /// Reads `split`'s lines of worker `worker` of `num_workers` (>= 1) into
  /// batches of `batch_size` (>= 1), hashing into `rows`. Checks every
  /// file first: kNotFound or kInvalidArgument (empty) naming it.
  static Result<std::unique_ptr<CriteoStream>> Open(CriteoSplit split,
                                                    const CriteoTableRows& rows,
                                                    int64_t batch_size,
                                                    int worker,
                                                    int num_workers);
  ~CriteoStream();

  /// The next batch into `*batch`; false once the pass is over (the next
  /// call starts another, from the first file). A truncated gzip file is
  /// left at its break with one line to `warn` (may be empty: none).
  /// kIOError on a read error.
  Result<bool> Next(CriteoBatch* batch,
                    const std::function<void(const std::string&)>& warn = {});
  const CriteoCounts& counts() const { return counts_; }

 private:
  CriteoStream(CriteoSplit split, const CriteoTableRows& rows,
               int64_t batch_size, int worker, int num_workers);
  // The next line of this worker's, parsed into *sample; false at the
  // pass's end.
  Result<bool> NextSample(CriteoSample* sample,
                          const std::function<void(const std::string&)>& warn);
  // Whether line `index` of the files is this split's.
  bool InSplit(int64_t index) const;

  CriteoSplit split_;
  CriteoTableRows rows_;
  int64_t batch_size_;
  int worker_;
  int num_workers_;
  size_t file_ = 0;                 // the file being read
  std::unique_ptr<LineFile> open_;  // it, once opened
  int64_t index_ = 0;               // lines of this pass so far
  int64_t split_index_ = 0;         // of them, the split's
  bool pass_over_ = false;          // the pass ended after the last batch
  CriteoCounts counts_;
};

}  // namespace pstrain::data
