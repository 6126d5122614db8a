#pragma once
// StepRecords: the records of the steps that made the versions this
// server's standbys do not hold yet (ps/store/snapshot.h, TakeStepRecord),
// each taken as its version was made. A standby asks for the version after
// the one it holds; when that version is made already, its record is here,
// and the standby replays it rather than getting the version whole. In
// async each push makes a version, and another worker's push often makes
// the next one before the standby's request for it comes.
//
// Threading: not thread-safe; the Engine's thread only.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

#include "ps/store/snapshot.h"

namespace pstrain::ps {

class StepRecords {
 public:
  /// Records kept at most; past it the oldest goes (its standby, that far
  /// behind, gets the version whole).
  static constexpr size_t kMaxRecords = 64;

  /// Keeps `record` (a step record, of a newer version than any kept).
  void Add(std::shared_ptr<const Snapshot> record);
  /// The record of the step that made `version`, or nullptr.
  std::shared_ptr<const Snapshot> Find(uint64_t version) const;
  /// Drops the records of versions <= `held`: every standby holds them.
  void DropThrough(uint64_t held);
  size_t size() const { return records_.size(); }

 private:
  std::deque<std::shared_ptr<const Snapshot>> records_;  // oldest first
};

}  // namespace pstrain::ps
