#pragma once
// What a benchmark ran on and what it was built with, for the "machine" and
// "build" objects of every `pstrain bench` JSON document. Reads /proc and
// uname; stateless and thread-safe.

#include <nlohmann/json.hpp>

namespace pstrain::bench {

/// The "schema" of every `pstrain bench` document.
inline constexpr const char* kBenchSchema = "pstrain.bench/1";

/// {"cores": hardware threads (int), "memory_bytes": MemTotal of
/// /proc/meminfo in bytes (0 if unreadable), "cpu_model": the first
/// "model name" of /proc/cpuinfo ("" if none), "kernel": "Linux 6.1.0-18-amd64
/// x86_64" from uname}.
nlohmann::json MachineInfo();

/// {"pstrain_version", "protocol_version" (wire::kWireVersion), "compiler"
/// (__VERSION__), "build_type" (CMAKE_BUILD_TYPE), "cxx_flags" (the flags of
/// that build type plus the project's compile options), "libtorch_version"
/// (TORCH_VERSION), "cuda_available" (bool), "blas": the path of the BLAS
/// library mapped into this process (libblas / libopenblas, from
/// /proc/self/maps; "" if none is loaded), "blas_kind": "openblas",
/// "reference", "unknown" or "none"}.
nlohmann::json BuildInfo();

/// {"schema": kBenchSchema, "machine": MachineInfo(), "build": BuildInfo()}:
/// the start of every document; the caller adds its result ("wire",
/// "train").
nlohmann::json BenchDocument();

}  // namespace pstrain::bench
