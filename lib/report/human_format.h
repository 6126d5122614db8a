#pragma once
// FormatHuman: one readable line for an event that EventLog also writes as
// JSON. Pure function; thread-safe.

#include <string>

#include <nlohmann/json.hpp>

namespace pstrain::report {

/// Returns one line (no trailing newline) describing `event`.
/// Known events and the fields they read (each optional; a field of the
/// wrong type is treated as unknown):
///   step:    epoch, step, total_steps, loss, samples_per_second
///            -> "epoch 1 step 50/937 loss 0.5123 1234 samples/s"
///   eval:    step, test_accuracy, test_loss
///            -> "eval step 937: test accuracy 0.8712 loss 0.3561"
///   epoch:   epoch, loss, test_accuracy, test_loss, wall_seconds,
///            samples_per_second
///            -> "epoch 1 done: loss 0.5123, test accuracy 0.8712, ..."
///   summary: test_accuracy, test_loss, steps, wall_seconds,
///            samples_per_second, bytes_pushed, bytes_pulled,
///            compute_seconds, communication_seconds, waiting_seconds
///            -> "done: test accuracy 0.8712, loss 0.3561, 937 steps in
///               85.2 s, 1407 samples/s, pushed 4.5 GB, pulled 4.5 GB,
///               compute 81% / communication 19%"
///   error:   message -> "error: message"
/// Fields a known event does not read, and all fields of other events, are
/// appended as " k=v" in key order: "listen port=29500".
/// Accuracy and loss get 4 decimals, seconds 1, samples/s none; bytes are
/// shown 1000-based ("4.5 GB"). The compute / communication / waiting shares
/// are percentages of their sum.
std::string FormatHuman(const std::string& event, const nlohmann::json& fields);

/// "512 B", "1.5 kB", "4.5 GB": 1000-based, one decimal above bytes.
std::string FormatBytes(double bytes);

}  // namespace pstrain::report
