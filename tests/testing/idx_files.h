#pragma once
// Test helpers for lib/data: build IDX bytes, write them plain or gzipped
// into a fresh temporary directory that is removed afterwards.

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::data::testing {

/// The bytes of an IDX file: big-endian `magic`, big-endian `dims`, `data`.
inline std::string IdxBytes(uint32_t magic, const std::vector<uint32_t>& dims,
                            const std::string& data) {
  std::string out;
  auto put32 = [&out](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((v >> shift) & 0xff));
    }
  };
  put32(magic);
  for (uint32_t d : dims)
    put32(d);
  return out + data;
}

/// IDX images uint8 [n,rows,cols] whose pixel i is (i * 7) % 256.
inline std::string ImagesBytes(uint32_t n, uint32_t rows = 28,
                               uint32_t cols = 28) {
  std::string data(size_t{n} * rows * cols, '\0');
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<char>((i * 7) % 256);
  }
  return IdxBytes(0x00000803, {n, rows, cols}, data);
}

/// IDX labels uint8 [n] whose label i is i % 10.
inline std::string LabelsBytes(uint32_t n) {
  std::string data(n, '\0');
  for (uint32_t i = 0; i < n; ++i)
    data[i] = static_cast<char>(i % 10);
  return IdxBytes(0x00000801, {n}, data);
}

inline void WritePlain(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline void WriteGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  int n = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  EXPECT_EQ(n, static_cast<int>(bytes.size())) << path;
  ASSERT_EQ(gzclose(f), Z_OK) << path;
}

/// Writes a small Fashion-MNIST-shaped data set (the four IDX files, gzipped)
/// of `train` and `test` samples into `dir`.
inline void WriteTinyDataset(const std::string& dir, uint32_t train,
                             uint32_t test) {
  WriteGz(dir + "/train-images-idx3-ubyte.gz", ImagesBytes(train));
  WriteGz(dir + "/train-labels-idx1-ubyte.gz", LabelsBytes(train));
  WriteGz(dir + "/t10k-images-idx3-ubyte.gz", ImagesBytes(test));
  WriteGz(dir + "/t10k-labels-idx1-ubyte.gz", LabelsBytes(test));
}

/// A fresh directory under ::testing::TempDir(), removed on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "pstrain_" +
            (info ? std::string(info->name()) : std::string("test")) + "_" +
            std::to_string(::getpid()) + "_" + std::to_string(counter++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace pstrain::data::testing
