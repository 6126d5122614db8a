#pragma once
// DriverJob: a StepDriver (ps/engine/step_driver.h) over a real store of
// one key, w = [1, 2], with `workers` registered workers (worker w is rank
// w + 1, connection 10 + w), for the tests of the driver and of the parts
// that read it (the ReplyDesk). Pushes go the whole path: planned from
// their meta, read piece by piece, applied.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "ps/engine/key_formats.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_watch.h"
#include "ps/engine/read_plan.h"
#include "ps/engine/step_driver.h"
#include "ps/job/tensor_codec.h"
#include "ps/store/parameter_server.h"
#include "testing/engine_harness.h"
#include "testing/fake_outbox.h"

namespace pstrain::testing {

struct DriverJob {
  /// `step_timeout`: --step_timeout in seconds (0: off).
  DriverJob(ps::Mode mode, int workers, double step_timeout = 0)
      : spec(Spec(mode, workers, step_timeout)),
        params{torch::tensor({1.0f, 2.0f}).requires_grad_()},
        store(spec, params),
        formats(spec, {ps::KeySpecOf("w", params[0])}, store),
        members(1, workers),
        watch(std::chrono::seconds(120), 0),
        steps(spec, &store, &formats, &members, &watch, &outbox) {
    for (int w = 0; w < workers; ++w) {
      peers.push_back(std::make_unique<ps::WorkerPeer>(ps::Peer(), w));
      peers.back()->id = 10 + w;
      peers.back()->rank = w + 1;
      members.Register(w, peers.back().get(), At(0));
    }
  }

  /// The engine's time `seconds` after its epoch.
  static ps::Time At(double seconds) {
    return ps::Time{} + std::chrono::duration_cast<ps::EngineClock::duration>(
                            std::chrono::duration<double>(seconds));
  }

  /// Worker w's push of gradient `grad` (every element) for the store's
  /// version, planned and read at 1 s; returns whether applying it closed
  /// the step.
  Result<bool> Push(int w, float grad) {
    ps::WorkerPeer& peer = *peers[w];
    wire::Push push;
    push.version = store.version();
    push.grads = {ps::DescribeTensor(0, params[0])};
    std::string meta;
    wire::EncodeMeta(push, &meta);
    ps::ReadPlan plan;
    PS_RETURN_IF_ERROR(steps.PlanPush(peer, wire::MsgType::kPush, meta, &plan));
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      auto* f = static_cast<float*>(plan.buffers[i].data);
      for (size_t j = 0; j < plan.buffers[i].bytes / sizeof(float); ++j)
        f[j] = grad;
      steps.ReadPiece(peer, i);
    }
    return steps.Apply(peer, push.version, At(1));
  }

  static ps::JobSpec Spec(ps::Mode mode, int workers, double step_timeout) {
    ps::JobSpec s = SgdSpec(mode, workers);
    s.step_timeout = step_timeout;
    return s;
  }

  ps::JobSpec spec;
  std::vector<at::Tensor> params;
  ps::ParameterServer store;
  ps::KeyFormats formats;
  ps::Membership members;
  ps::PeerWatch watch;
  FakeOutbox outbox;
  ps::StepDriver steps;
  std::vector<std::unique_ptr<ps::WorkerPeer>> peers;
};

}  // namespace pstrain::testing
