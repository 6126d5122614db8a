#pragma once
// The run's length, as rank 0 counts it before any worker connects: the
// steps each worker will run, and from them the server versions an
// annealed lr spans (--lr_schedule auto or cosine). Workers count their
// own steps from their own shard the same way (worker/trainer.h), so both
// agree wherever rank 0 reads the training split the workers read.
// Free functions; thread-safe.

#include <cstdint>
#include <string>

#include "data/text_corpus.h"
#include "ps/job/job_spec.h"
#include "report/event_log.h"
#include "util/result.h"

namespace pstrain::ps {

/// Steps each worker runs: spec.epochs * steps_per_epoch, at most
/// spec.max_steps when that is > 0. Saturates at INT64_MAX.
/// REQUIRES: steps_per_epoch >= 1.
int64_t StepsPerWorker(const JobSpec& spec, int64_t steps_per_epoch);

/// Steps in one epoch of each worker, over the training split in
/// `data_dir`: images, floor(N / (num_workers * batch_size)) as
/// data::ShardSampler cuts N samples; text (`corpus`, required then), the
/// BPTT windows of one worker's batch_size columns of num_workers *
/// batch_size (data::BpttBatches). Errors: those of OpenJobSource (the
/// split cannot be read), kInvalidArgument when an epoch has no step.
Result<int64_t> StepsPerEpoch(const JobSpec& spec, const std::string& data_dir,
                              const data::TextCorpus* corpus);

/// Rank 0, before the server is built: when spec->lr_schedule anneals
/// (auto or cosine) and spec->total_steps is 0, sets total_steps to the
/// versions of the whole run (VersionsOfSteps of StepsPerWorker). When the
/// training split cannot be read there, it leaves 0 (the schedule then
/// spans --max_steps, or auto is constant) and logs why. Logs the schedule
/// chosen either way ("lr schedule: cosine over 937 versions ...").
void CountRunVersions(JobSpec* spec, const std::string& data_dir,
                      const data::TextCorpus* corpus, report::EventLog* log);

}  // namespace pstrain::ps
