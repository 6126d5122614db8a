#include "ps/update_rule.h"

namespace pstrain::ps {

std::unique_ptr<UpdateRule> MakeUpdateRule(const JobSpec& spec,
                                           ParameterServer* server) {
  if (spec.mode != Mode::kSync)
    return MakeAsyncUpdate(server, spec.mode == Mode::kSsp);
  if (server->buffers_pushes())
    return MakeBufferedSync(server, spec.step_timeout);
  return MakeStreamingSync(server);
}

}  // namespace pstrain::ps
