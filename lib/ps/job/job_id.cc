#include "ps/job/job_id.h"

#include <nlohmann/json.hpp>

#include "net/sha256.h"

namespace pstrain::ps {

std::string JobId(const JobSpec& spec) {
  return net::Sha256Hex(ToJson(spec).dump()).substr(0, 12);
}

}  // namespace pstrain::ps
