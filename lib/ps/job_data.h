#pragma once
// The job's data set and model, as every rank builds them from the job
// spec: rank 0 reads its test set's shape into the spec (channels, size,
// classes), every other rank builds the model from the spec, and each
// worker checks that its training set has that shape. Free functions.

#include <memory>
#include <string>

#include "data/source.h"
#include "models/evaluator.h"
#include "models/model.h"
#include "models/model_zoo.h"
#include "ps/job_spec.h"
#include "report/event_log.h"
#include "util/result.h"

namespace pstrain::ps {

/// What data::OpenSource reads for `spec` from `data_dir` ("" for the
/// data set's default).
data::SourceOptions SourceOptionsOf(const JobSpec& spec,
                                    const std::string& data_dir);

/// Opens `split` of the job's data set. Bad data (a missing or malformed
/// folder or file) is bad input: kInvalidArgument, one line naming the path.
/// A corrupt image met while reading is logged once to `log` ("skipping
/// corrupt image PATH: reason"); nullptr: to stderr.
Result<std::unique_ptr<data::Source>> OpenJobSource(
    const JobSpec& spec, const std::string& data_dir, data::Split split,
    report::EventLog* log = nullptr);

/// Stores `shape` (rank 0's test set) in spec's input_channels, input_size
/// and num_classes.
void SetInputShape(const data::SourceShape& shape, JobSpec* spec);

/// The model's input as the spec says; {1, 28, 10} (Fashion-MNIST) where
/// the spec has none yet (0s).
models::InputShape InputShapeOf(const JobSpec& spec);

/// kInvalidArgument unless `shape` (a worker's training set) is what the
/// spec says: "--data_dir D: the training set has 3x32x32 images in 10
/// classes; rank 0's test set 1x28x28 in 10".
Status CheckInputShape(const JobSpec& spec, const std::string& data_dir,
                       const data::SourceShape& shape);

/// The job's model (models::MakeModel(spec.model, InputShapeOf(spec))).
Result<std::shared_ptr<models::Model>> MakeJobModel(const JobSpec& spec);

/// An Evaluator over all of `source` (which must outlive it), read batch by
/// batch.
std::shared_ptr<models::Evaluator> MakeEvaluator(
    std::shared_ptr<models::Model> model,
    std::shared_ptr<const data::Source> source,
    models::EvaluatorOptions options = {});

}  // namespace pstrain::ps
