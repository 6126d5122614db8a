#pragma once
// The inverse of rank 0's job flags (ps/job/job_fields.inc): a JobSpec as the
// command line that sets it, for a process that starts another pstrain with
// the same job (launch's serve children, bench train's launch). Free
// functions over value types; thread-safe.

#include <string>
#include <type_traits>
#include <vector>

#include "ps/job/job_spec.h"

namespace pstrain::ps {

/// Whether a kValue field of type T binds to its flag as it is: a string or
/// a number.
template <typename T>
inline constexpr bool kPlainFlagValue = std::is_same_v<T, std::string> ||
                                        (std::is_arithmetic_v<T> &&
                                         !std::is_same_v<T, bool>);

/// "--name" and value for each field of `spec` that has a flag, in the
/// table's order: numbers exactly (ExactText), text flags as their parser
/// reads them back ("30s", "0.9,0.999"), a switch as "--name" when on and
/// "--name=false" when off but on by default. Parsing them gives `spec`'s
/// flag fields back.
std::vector<std::string> JobFlagArgs(const JobSpec& spec);

/// The names --optimizer takes, as a sentence: "sgd, adam, adamw, adagrad
/// or rmsprop" (ps::OptimizerNames, the one list of them).
std::string OptimizerChoices();
/// The --help of a field's flag: the table's help, and for --optimizer the
/// names it takes (OptimizerChoices).
std::string JobFlagHelp(const JobField& field);

/// `v` exactly, as a flag's value ("0.03", 17 digits where needed).
std::string ExactText(double v);

}  // namespace pstrain::ps
