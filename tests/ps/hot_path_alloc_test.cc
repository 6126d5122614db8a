// Steady-state messages allocate nothing in pstrain's own code: a worker's
// push_pull allocates nothing at all, and the server's network and protocol
// code adds nothing to what libtorch's optimizer step allocates.

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <optional>
#include <sstream>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <torch/torch.h>

#include "ps/parameter_server.h"
#include "ps/service.h"
#include "ps/tensor_codec.h"
#include "testing/alloc_counter.h"
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
  return {torch::zeros({300, 1000}).requires_grad_(), torch::zeros({1000}).requires_grad_(),
          torch::zeros({7}).requires_grad_()};
}

// Allocations of `steps` pushes applied straight to a ParameterServer, with
// no network: what libtorch's update itself costs.
size_t CoreAllocations(Mode mode, int steps) {
  auto params = Params();
  ParameterServer core(Spec(mode), params);
  std::vector<float> grad(300 * 1000, 1e-3f);
  auto push = [&](uint64_t v) {
    if (mode == Mode::kSync) {
      for (int k = 0; k < core.num_keys(); ++k) {
        const uint64_t n = params[k].nbytes(), piece = ParameterServer::kPieceBytes;
        for (uint64_t off = 0; off < n; off += piece) {
          core.Accumulate(0, k, off, grad.data(), std::min(piece, n - off));
        }
      }
    }
    ASSERT_TRUE(core.Push(0, v).ok());
  };
  for (int v = 0; v < 3; ++v) push(v);
  AllocCounter counter;
  for (int v = 3; v < 3 + steps; ++v) push(v);
  return counter.count();
}

class HotPathAllocTest : public ::testing::TestWithParam<Mode> {};

TEST_P(HotPathAllocTest, NetworkPathAddsNoAllocationPerMessage) {
  const Mode mode = GetParam();
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
  Service service(&io, Spec(mode), {KeySpecOf("a", params[0]), KeySpecOf("b", params[1]),
                                    KeySpecOf("c", params[2])},
                  &core, &log, so);
  ASSERT_TRUE(service.Listen().ok());
  std::thread server([&] { EXPECT_TRUE(service.Run().ok()); });

  const std::vector<wire::KeySpec> keys = {KeySpecOf("a", params[0]), KeySpecOf("b", params[1]),
                                           KeySpecOf("c", params[2])};
  worker::PsClient client(std::chrono::milliseconds(10000), {});
  ASSERT_TRUE(client.Connect("127.0.0.1", service.port()).ok());
  ASSERT_TRUE(client.Handshake(1, 2).ok());
  ASSERT_TRUE(client.Register(keys).ok());
  std::vector<at::Tensor> worker_params, worker_grads;
  for (const auto& p : params) {
    worker_params.push_back(torch::zeros_like(p).detach());
    worker_grads.push_back(torch::full_like(p, 1e-3).detach());
  }
  client.Attach(worker_params, worker_grads);
  uint64_t version = client.Pull(0).value();
  for (int i = 0; i < 3; ++i) version = client.PushPull(version).value();

  // Runs `fn` on the server's thread and waits for it.
  auto on_server = [&](const std::function<void()>& fn) {
    std::promise<void> done;
    asio::post(io, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  };
  std::optional<AllocCounter> server_counter;
  size_t server_count = 0, client_count = 0;
  on_server([&] { server_counter.emplace(); });
  {
    AllocCounter counter;
    for (int i = 0; i < kSteps; ++i) version = client.PushPull(version).value();
    client_count = counter.count();
  }
  on_server([&] {
    server_count = server_counter->count();
    server_counter.reset();
  });
  ASSERT_TRUE(client.Done(nlohmann::json::object()).ok());
  server.join();

  EXPECT_EQ(client_count, 0u);
  const size_t core_allocations = CoreAllocations(mode, kSteps);
  EXPECT_EQ(server_count, core_allocations)
      << "libtorch's update alone: " << core_allocations << " allocations in "
                                << kSteps << " steps";
}

INSTANTIATE_TEST_SUITE_P(Modes, HotPathAllocTest, ::testing::Values(Mode::kSync, Mode::kAsync),
                         [](const auto& info) { return std::string(ModeName(info.param)); });

}  // namespace
}  // namespace pstrain::ps
