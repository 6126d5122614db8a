#pragma once
// One row of `bench train` from the runs of one mode over several seeds
// (--seeds K): accuracy is given as mean and standard deviation over seeds,
// since one async run's accuracy moves with the order pushes arrive in.

#include <vector>

#include <nlohmann/json.hpp>

namespace pstrain::bench {

/// `runs`: rows of one mode (RunTrainBench's fields), one per seed, in seed
/// order. Returns the first run's row with every top-level number other
/// than "seed" replaced by its mean over the runs, and:
///   seeds: the runs' seeds; test_accuracies: each run's accuracy;
///   test_accuracy_sd, samples_per_second_sd: the sample standard deviation
///   (n - 1 in the denominator; null for one run).
/// A field some run lacks keeps the first run's value. REQUIRES: runs not
/// empty, each a JSON object.
nlohmann::json MeanOverSeeds(const std::vector<nlohmann::json>& runs);

}  // namespace pstrain::bench
