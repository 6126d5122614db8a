#pragma once
// What `pstrain --version` prints.

#include <string>

namespace pstrain::apps {

/// "pstrain 0.1.0 (protocol 1)\nlibtorch 1.13.0, CUDA available: no":
/// pstrain's version, the wire protocol's, the libtorch it runs on and
/// whether that libtorch sees a CUDA GPU.
std::string VersionText();

}  // namespace pstrain::apps
