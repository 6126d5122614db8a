#include "bench/machine_info.h"

#include <sys/utsname.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <thread>

#include <torch/cuda.h>
#include <torch/version.h>

#include "wire/frame.h"

#ifndef PSTRAIN_VERSION
#define PSTRAIN_VERSION "unknown"
#endif
#ifndef PSTRAIN_BUILD_TYPE
#define PSTRAIN_BUILD_TYPE ""
#endif
#ifndef PSTRAIN_CXX_FLAGS
#define PSTRAIN_CXX_FLAGS ""
#endif

namespace pstrain::bench {

namespace {

std::string Trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t");
  size_t end = s.find_last_not_of(" \t\r\n");
  return begin == std::string::npos ? "" : s.substr(begin, end - begin + 1);
}

// The value after "key:" on the first line of `path` that starts with
// `key`; "" if there is none.
std::string ProcField(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0)
      continue;
    size_t colon = line.find(':');
    if (colon != std::string::npos)
      return Trim(line.substr(colon + 1));
  }
  return "";
}

uint64_t MemTotalBytes() {
  std::string kib = ProcField("/proc/meminfo", "MemTotal");  // "16367436 kB"
  try {
    return kib.empty() ? 0 : std::stoull(kib) * 1024;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string Kernel() {
  utsname u{};
  if (uname(&u) != 0)
    return "";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

// The path of the BLAS library mapped into this process: libblas.so.3 as
// the alternatives resolved it, else a libopenblas found alone.
std::string LoadedBlas() {
  std::ifstream in("/proc/self/maps");
  std::string line, openblas;
  while (std::getline(in, line)) {
    size_t slash = line.find('/');
    if (slash == std::string::npos)
      continue;
    std::string path = line.substr(slash);
    std::string file = path.substr(path.rfind('/') + 1);
    if (file.rfind("libblas", 0) == 0)
      return path;
    if (file.rfind("libopenblas", 0) == 0 && openblas.empty())
      openblas = path;
  }
  return openblas;
}

std::string BlasKind(const std::string& path) {
  if (path.find("openblas") != std::string::npos)
    return "openblas";
  if (path.find("/blas/") != std::string::npos)
    return "reference";
  return "unknown";
}

}  // namespace

nlohmann::json MachineInfo() {
  return {{"cores", std::thread::hardware_concurrency()},
          {"memory_bytes", MemTotalBytes()},
          {"cpu_model", ProcField("/proc/cpuinfo", "model name")},
          {"kernel", Kernel()}};
}

nlohmann::json BuildInfo() {
  std::string blas = LoadedBlas();
  return {{"pstrain_version", PSTRAIN_VERSION},
          {"protocol_version", wire::kWireVersion},
          {"compiler", __VERSION__},
          {"build_type", PSTRAIN_BUILD_TYPE},
          {"cxx_flags", Trim(PSTRAIN_CXX_FLAGS)},
          {"libtorch_version", TORCH_VERSION},
          {"cuda_available", torch::cuda::is_available()},
          {"blas", blas},
          {"blas_kind", blas.empty() ? "none" : BlasKind(blas)}};
}

nlohmann::json BenchDocument() {
  return {{"schema", kBenchSchema},
          {"machine", MachineInfo()},
          {"build", BuildInfo()}};
}

}  // namespace pstrain::bench
