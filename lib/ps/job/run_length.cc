#include "ps/job/run_length.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include <torch/torch.h>

#include "data/bptt_batches.h"
#include "data/sampler.h"
#include "ps/job/job_data.h"
#include "ps/job/optimizer.h"
#include "util/check.h"

namespace pstrain::ps {

int64_t StepsPerWorker(const JobSpec& spec, int64_t steps_per_epoch) {
  const int64_t all =
      spec.epochs > std::numeric_limits<int64_t>::max() / steps_per_epoch
          ? std::numeric_limits<int64_t>::max()
          : spec.epochs * steps_per_epoch;
  return spec.max_steps > 0 ? std::min(all, spec.max_steps) : all;
}

Result<int64_t> StepsPerEpoch(const JobSpec& spec, const std::string& data_dir,
                              const data::TextCorpus* corpus) {
  const int workers = std::max(1, spec.num_workers());
  int64_t steps = 0;
  if (IsTextJob(spec)) {
    PS_CHECK(corpus != nullptr) << "StepsPerEpoch of a text job: no corpus";
    const int64_t columns = spec.batch_size * workers;
    steps = data::BpttBatches(data::Batchify(corpus->train, columns), 0,
                              spec.batch_size, spec.bptt)
                .size();
  } else {
    PS_ASSIGN_OR_RETURN(
        std::unique_ptr<data::Source> train,
        OpenJobSource(spec, data_dir, data::Split::kTrain, nullptr));
    steps = data::ShardSampler(train->size(), workers, 0, spec.batch_size,
                               spec.seed)
                .steps_per_epoch();
  }
  if (steps < 1) {
    return InvalidArgument("--batch_size " + std::to_string(spec.batch_size) +
                           " x " + std::to_string(workers) +
                           " workers: an epoch of the training split has no "
                           "step");
  }
  return steps;
}

void CountRunVersions(JobSpec* spec, const std::string& data_dir,
                      const data::TextCorpus* corpus, report::EventLog* log) {
  const bool anneals =
      spec->lr_schedule == "auto" || spec->lr_schedule == "cosine";
  if (anneals && spec->total_steps == 0) {
    Result<int64_t> per_epoch = StepsPerEpoch(*spec, data_dir, corpus);
    if (per_epoch.ok()) {
      spec->total_steps =
          VersionsOfSteps(*spec, StepsPerWorker(*spec, *per_epoch));
    } else {
      log->Info("--lr_schedule " + spec->lr_schedule +
                ": rank 0 cannot count the run's steps (" +
                per_epoch.status().message() + ")");
    }
  }
  const Result<LrSchedule> schedule = LrScheduleOf(*spec);
  if (!schedule.ok())
    return;  // ValidateJobSpec has said so already
  std::ostringstream line;
  line << "lr schedule: ";
  if (schedule->kind == LrSchedule::Kind::kCosine) {
    line << "cosine over " << ScheduleVersions(*spec) << " versions, from --lr "
         << spec->lr << " to 0";
  } else if (spec->lr_schedule == "auto") {
    line << "constant --lr " << spec->lr << " (the run's length is not known)";
  } else {
    line << spec->lr_schedule << " from --lr " << spec->lr;
  }
  log->Info(line.str());
}

}  // namespace pstrain::ps
