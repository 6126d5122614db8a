#pragma once
// JobId: a short name of a job, the same on every rank: the `job` label of
// its metrics (share/doc/metrics.md), so that a Prometheus query groups a
// run's ranks and tells two runs apart.

#include <string>

#include "ps/job/job_spec.h"

namespace pstrain::ps {

/// The first 12 hex digits of the SHA-256 of the spec's JSON (ToJson):
/// rank 0's spec and the one each worker receives give the same id.
std::string JobId(const JobSpec& spec);

}  // namespace pstrain::ps
