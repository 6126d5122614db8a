#include "ps/engine/step_records.h"

#include <utility>

#include "util/check.h"

namespace pstrain::ps {

void StepRecords::Add(std::shared_ptr<const Snapshot> record) {
  PS_CHECK(record && record->step_record) << "not a step record";
  PS_CHECK(records_.empty() || records_.back()->version < record->version)
      << "step record of version " << record->version << " after "
      << records_.back()->version;
  records_.push_back(std::move(record));
  if (records_.size() > kMaxRecords)
    records_.pop_front();
}

std::shared_ptr<const Snapshot> StepRecords::Find(uint64_t version) const {
  for (const auto& r : records_) {
    if (r->version == version)
      return r;
  }
  return nullptr;
}

void StepRecords::DropThrough(uint64_t held) {
  while (!records_.empty() && records_.front()->version <= held)
    records_.pop_front();
}

}  // namespace pstrain::ps
