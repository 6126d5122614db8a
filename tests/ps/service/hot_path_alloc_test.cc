// Steady-state messages allocate nothing in pstrain's own code: a worker's
// push_pull allocates nothing at all, gated or not (opening the gate
// neither), and the server's network and protocol code adds nothing to what
// libtorch's optimizer step allocates.

#include <atomic>
#include <functional>
#include <future>
#include <optional>
#include <sstream>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "net/send_gate.h"
#include "ps/engine/step_driver.h"
#include "ps/job/tensor_codec.h"
#include "ps/service/service.h"
#include "ps/store/parameter_server.h"
#include "testing/alloc_counter.h"
#include "testing/shard.h"
#include "worker/ps_client.h"

namespace pstrain::ps {
namespace {

using testing::AllocCounter;
constexpr int kSteps = 50;

JobSpec Spec(Mode mode) {
  JobSpec s;
  s.mode = mode;
  s.lr = 1e-6;
  s.momentum = 0.9;
  s.world_size = 2;
  return s;
}

// Parameters of several keys, one larger than the sync chunk (512 KiB).
std::vector<at::Tensor> Params() {
  return {torch::zeros({300, 1000}).requires_grad_(),
          torch::zeros({1000}).requires_grad_(),
          torch::zeros({7}).requires_grad_()};
}

// Allocations of `steps` pushes applied straight to a ParameterServer and
// its rule, with no network: what libtorch's update itself costs.
size_t CoreAllocations(Mode mode, int steps) {
  auto params = Params();
  testing::Shard core(Spec(mode), params);
  std::vector<float> grad(300 * 1000, 1e-3f);
  auto push = [&](uint64_t v) {
    if (mode == Mode::kSync) {
      for (int k = 0; k < core.store().num_keys(); ++k) {
        const uint64_t n = params[k].nbytes(),
                       piece = ParameterServer::kPieceBytes;
        for (uint64_t off = 0; off < n; off += piece) {
          core.Accumulate(0, k, off, grad.data(), std::min(piece, n - off));
        }
      }
    }
    ASSERT_TRUE(core.Push(0, v).ok());
  };
  for (int v = 0; v < 3; ++v)
    push(v);
  AllocCounter counter;
  for (int v = 3; v < 3 + steps; ++v)
    push(v);
  return counter.count();
}

struct Counts {
  size_t client = 0, server = 0, producer = 0;
};

// Allocations of kSteps push-pulls of a PsClient against a Service on
// loopback, counted on the client's thread and on the server's. `gated`:
// each push waits on a SendGate (keys in reverse order) that a producer
// thread opens key by key, as backward does; its thread is counted too.
Counts NetworkAllocations(Mode mode, bool gated) {
  auto params = Params();
  ParameterServer core(Spec(mode), params);
  std::ostringstream sink;
  report::EventLogOptions lo;
  lo.quiet = true;
  lo.err = lo.out = &sink;
  report::EventLog log(lo);
  asio::io_context io;
  ServiceOptions so;
  so.host = "127.0.0.1";
  so.port = 0;
  Service service(&io, Spec(mode),
                  {KeySpecOf("a", params[0]), KeySpecOf("b", params[1]),
                   KeySpecOf("c", params[2])},
                  &core, &log, so);
  EXPECT_TRUE(service.Listen().ok());
  std::thread server([&] { EXPECT_TRUE(service.Run().ok()); });

  const std::vector<wire::KeySpec> keys = {KeySpecOf("a", params[0]),
                                           KeySpecOf("b", params[1]),
                                           KeySpecOf("c", params[2])};
  worker::PsClient client(std::chrono::milliseconds(10000), {});
  EXPECT_TRUE(client.Connect("127.0.0.1", service.port()).ok());
  EXPECT_TRUE(client.Handshake(1, 2).ok());
  EXPECT_TRUE(client.Register(keys).ok());
  std::vector<at::Tensor> worker_params, worker_grads;
  for (const auto& p : params) {
    worker_params.push_back(torch::zeros_like(p).detach());
    worker_grads.push_back(torch::full_like(p, 1e-3).detach());
  }
  client.Attach(worker_params, worker_grads);
  net::SendGate gate;
  std::atomic<int> started{-1};  // the push the producer may open
  Counts counts;
  std::thread producer;
  if (gated) {
    client.SetSendGate(&gate, {3, 2, 1});
    producer = std::thread([&] {
      std::optional<AllocCounter> counter;
      for (int i = 0; i < 3 + kSteps; ++i) {
        while (started.load() < i)
          std::this_thread::yield();
        if (i == 3)
          counter.emplace();  // after the warm-up pushes, as below
        for (uint32_t mark = 1; mark <= 3; ++mark) {
          std::this_thread::yield();
          gate.OpenTo(mark);
        }
      }
      counts.producer = counter->count();
    });
  }
  int pushes = 0;
  auto push_pull = [&](uint64_t version) {
    gate.Reset();
    started.store(pushes++);
    if (!gated)
      gate.OpenTo(net::SendGate::kAll);
    return client.PushPull(version).value();
  };
  uint64_t version = client.Pull(0).value();
  for (int i = 0; i < 3; ++i)
    version = push_pull(version);

  // Runs `fn` on the server's thread and waits for it.
  auto on_server = [&](const std::function<void()>& fn) {
    std::promise<void> done;
    asio::post(io, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  };
  // A sync reply leaves before its step is done (the server steps key by
  // key after it): the window starts after the last warm-up step and ends
  // after the last counted one, so it holds exactly kSteps steps.
  std::optional<AllocCounter> server_counter;
  on_server([&] {
    service.engine().steps().UpdateAllKeys();
    server_counter.emplace();
  });
  // A tick once, halfway, while the server awaits the next push: its
  // housekeeping runs during training and is counted on the server. The
  // client's own windows leave out what asking for the tick allocates.
  for (int half = 0; half < 2; ++half) {
    if (half == 1)
      on_server([&] { service.TickNow(); });
    AllocCounter counter;
    for (int i = 0; i < kSteps / 2; ++i)
      version = push_pull(version);
    counts.client += counter.count();
  }
  on_server([&] {
    service.engine().steps().UpdateAllKeys();
    counts.server = server_counter->count();
    server_counter.reset();
  });
  if (producer.joinable())
    producer.join();
  EXPECT_TRUE(client.Done(report::WorkerStats{}).ok());
  server.join();
  return counts;
}

class HotPathAllocTest : public ::testing::TestWithParam<Mode> {};

TEST_P(HotPathAllocTest, NetworkPathAddsNoAllocationPerMessage) {
  const Mode mode = GetParam();
  const size_t core_allocations = CoreAllocations(mode, kSteps);
  for (bool gated : {false, true}) {
    Counts counts = NetworkAllocations(mode, gated);
    EXPECT_EQ(counts.client, 0u) << "gated " << gated;
    EXPECT_EQ(counts.producer, 0u) << "opening the gate";
    EXPECT_EQ(counts.server, core_allocations)
        << "gated " << gated
        << "; libtorch's update alone: " << core_allocations
        << " allocations in " << kSteps << " steps";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, HotPathAllocTest,
                         ::testing::Values(Mode::kSync, Mode::kAsync),
                         [](const auto& info) {
                           return std::string(ModeName(info.param));
                         });

}  // namespace
}  // namespace pstrain::ps
