#include "ps/rules/update_rule.h"

#include <string>
#include <utility>

#include "util/check.h"

namespace pstrain::ps {

UpdateRule::UpdateRule(const RuleTraits& traits, ParameterServer* store)
    : traits_(traits),
      store_(store),
      applied_(static_cast<size_t>(store->num_workers()), -1) {}

Status UpdateRule::set_applied(std::vector<int64_t> applied) {
  if (applied.size() != static_cast<size_t>(store_->num_workers())) {
    return InvalidArgument(std::to_string(applied.size()) +
                           " workers' applied pushes, expected " +
                           std::to_string(store_->num_workers()));
  }
  applied_ = std::move(applied);
  return Status::Ok();
}

std::unique_ptr<UpdateRule> MakeUpdateRule(const JobSpec& spec,
                                           ParameterServer* server) {
  switch (RuleOf(spec)) {
    case Rule::kStreamingSync:
      return MakeStreamingSync(spec, server);
    case Rule::kBufferedSync:
      return MakeBufferedSync(spec, server);
    case Rule::kAsync:
      return MakeAsyncUpdate(spec, server);
    case Rule::kSsp:
      return MakeSspUpdate(spec, server);
  }
  PS_CHECK(false) << "unknown update rule";
  return nullptr;
}

}  // namespace pstrain::ps
