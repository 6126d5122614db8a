#include "data/criteo_stream.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include <ATen/ATen.h>

#include "data/line_file.h"

namespace pstrain::data {

namespace {

namespace fs = std::filesystem;

// The day number of "day_N" or "day_N.gz"; -1 for any other name.
int64_t DayOf(const std::string& name) {
  std::string stem = name;
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".gz") == 0)
    stem.resize(stem.size() - 3);
  if (stem.rfind("day_", 0) != 0 || stem.size() == 4)
    return -1;
  int64_t day = 0;
  for (size_t i = 4; i < stem.size(); ++i) {
    if (stem[i] < '0' || stem[i] > '9' || day > 1'000'000)
      return -1;
    day = day * 10 + (stem[i] - '0');
  }
  return day;
}

}  // namespace

int64_t CriteoCounts::bad_lines() const {
  int64_t n = 0;
  for (int64_t b : bad)
    n += b;
  return n;
}

Result<CriteoSplit> CriteoSplitOf(const std::string& data_dir, bool test) {
  std::error_code ec;
  if (!fs::is_directory(data_dir, ec))
    return NotFound(data_dir + ": no such folder (--data_dir)");
  std::map<int64_t, std::string> days;
  std::string train;
  for (const fs::directory_entry& e : fs::directory_iterator(data_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (const int64_t day = DayOf(name); day >= 0)
      days[day] = e.path().string();
    else if (name == "train.txt" || (name == "train.txt.gz" && train.empty()))
      train = e.path().string();
  }
  CriteoSplit split;
  if (days.size() == 1) {
    return InvalidArgument(data_dir +
                           ": one day file; expected two or more (the last "
                           "is held out) or train.txt");
  }
  if (!days.empty()) {
    for (const auto& [day, path] : days)
      split.files.push_back(path);
    if (test)
      split.files.erase(split.files.begin(), split.files.end() - 1);
    else
      split.files.pop_back();
    return split;
  }
  if (train.empty()) {
    return NotFound(data_dir +
                    ": no Criteo files, expected day_0, day_1, ... (plain or "
                    ".gz) or train.txt[.gz]");
  }
  split.files = {train};
  split.every = 10;
  split.held_out = test;
  return split;
}

Result<std::unique_ptr<CriteoStream>> CriteoStream::Open(
    CriteoSplit split, const CriteoTableRows& rows, int64_t batch_size,
    int worker, int num_workers) {
  for (const std::string& path : split.files)
    PS_RETURN_IF_ERROR(LineFile::Open(path).status());
  return std::unique_ptr<CriteoStream>(new CriteoStream(
      std::move(split), rows, batch_size, worker, num_workers));
}

CriteoStream::CriteoStream(CriteoSplit split, const CriteoTableRows& rows,
                           int64_t batch_size, int worker, int num_workers)
    : split_(std::move(split)),
      rows_(rows),
      batch_size_(batch_size),
      worker_(worker),
      num_workers_(num_workers) {}

CriteoStream::~CriteoStream() = default;

bool CriteoStream::InSplit(int64_t index) const {
  if (split_.every <= 0)
    return true;
  return (index % split_.every == split_.every - 1) == split_.held_out;
}

Result<bool> CriteoStream::NextSample(
    CriteoSample* sample, const std::function<void(const std::string&)>& warn) {
  while (file_ < split_.files.size()) {
    if (!open_) {
      PS_ASSIGN_OR_RETURN(open_, LineFile::Open(split_.files[file_]));
    }
    std::string_view line;
    Result<bool> read = open_->Next(&line);
    if (read.ok() && *read) {
      ++counts_.lines;
      const int64_t index = index_++;
      if (!InSplit(index) || split_index_++ % num_workers_ != worker_)
        continue;
      const CriteoBad why = ParseCriteoLine(line, rows_, sample);
      if (why == CriteoBad::kNone)
        return true;
      ++counts_.bad[static_cast<int>(why)];
      continue;
    }
    if (!read.ok()) {
      if (read.status().code() != StatusCode::kCorruption)
        return read.status();
      ++counts_.truncated_files;
      if (warn)
        warn(read.status().message() + "; the file's later lines are skipped");
    }
    open_.reset();
    ++file_;
  }
  // The pass is over; the one after starts from the first file.
  file_ = 0;
  index_ = 0;
  split_index_ = 0;
  pass_over_ = true;
  return false;
}

Result<bool> CriteoStream::Next(
    CriteoBatch* batch, const std::function<void(const std::string&)>& warn) {
  if (std::exchange(pass_over_, false))
    return false;  // the batch before was the pass's last
  std::vector<CriteoSample> samples;
  samples.reserve(static_cast<size_t>(batch_size_));
  CriteoSample s;
  while (static_cast<int64_t>(samples.size()) < batch_size_) {
    PS_ASSIGN_OR_RETURN(const bool got, NextSample(&s, warn));
    if (!got)
      break;
    samples.push_back(s);
  }
  if (samples.empty())
    return std::exchange(pass_over_, false);
  const auto b = static_cast<int64_t>(samples.size());
  batch->dense = at::empty({b, kCriteoDense}, at::kFloat);
  batch->rows = at::empty({b, kCriteoSparse}, at::kLong);
  batch->labels = at::empty({b}, at::kFloat);
  float* dense = batch->dense.data_ptr<float>();
  int64_t* rows = batch->rows.data_ptr<int64_t>();
  float* labels = batch->labels.data_ptr<float>();
  for (int64_t i = 0; i < b; ++i) {
    const CriteoSample& x = samples[static_cast<size_t>(i)];
    std::copy(x.dense.begin(), x.dense.end(), dense + i * kCriteoDense);
    std::copy(x.rows.begin(), x.rows.end(), rows + i * kCriteoSparse);
    labels[i] = x.label;
  }
  counts_.samples += b;
  return true;
}

}  // namespace pstrain::data
