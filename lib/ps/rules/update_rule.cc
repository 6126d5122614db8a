#include "ps/rules/update_rule.h"

#include "util/check.h"

namespace pstrain::ps {

std::unique_ptr<UpdateRule> MakeUpdateRule(const JobSpec& spec,
                                           ParameterServer* server) {
  const Rule rule = RuleOf(spec);
  const RuleTraits traits = RuleTraitsOf(spec);
  PS_CHECK(server->buffers_pushes() == (rule != Rule::kStreamingSync))
      << "the server was made for another job's update rule";
  switch (rule) {
    case Rule::kStreamingSync:
      return MakeStreamingSync(server, traits);
    case Rule::kBufferedSync:
      return MakeBufferedSync(server, traits);
    case Rule::kAsync:
      return MakeAsyncUpdate(server, traits);
    case Rule::kSsp:
      return MakeSspUpdate(server, traits);
  }
  PS_CHECK(false) << "unknown update rule";
  return nullptr;
}

}  // namespace pstrain::ps
