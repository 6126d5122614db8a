#include "ps/job/job_id.h"

#include <nlohmann/json.hpp>

#include "util/sha256.h"

namespace pstrain::ps {

std::string JobId(const JobSpec& spec) {
  return Sha256Hex(ToJson(spec).dump()).substr(0, 12);
}

}  // namespace pstrain::ps
