// The engine hands the job's TorchScript module (--model PATH) to whoever
// asks past its hello, straight from the bytes the spec keeps.

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/engine.h"
#include "testing/engine_harness.h"
#include "util/sha256.h"

namespace pstrain::ps {
namespace {

using testing::EngineHarness;

JobSpec Spec(const std::string& module) {
  JobSpec s;
  s.world_size = 2;
  s.model = "mlp.pt";
  s.module = std::make_shared<const std::string>(module);
  s.model_sha256 = Sha256Hex(module);
  return s;
}

TEST(ModuleEngineTest, AWorkerPastItsHelloGetsTheModulesBytes) {
  const std::string bytes(100000, 'm');
  const JobSpec spec = Spec(bytes);
  EngineHarness h(spec, {torch::zeros({4}).requires_grad_()});
  const PeerId peer = h.Accept();
  ASSERT_TRUE(h.Feed(peer, wire::Hello{wire::Role::kWorker, 1, 2}, 1).ok());
  ASSERT_TRUE(h.Feed(peer, wire::GetModule{}, 2).ok());
  ASSERT_FALSE(h.ClosedFor(peer));
  const auto& sent = h.outbox().sent.back();
  EXPECT_EQ(sent.peer, peer);
  EXPECT_EQ(sent.type, wire::MsgType::kModule);
  EXPECT_EQ(sent.request_id, 2u);
  wire::ModuleMsg msg;
  ASSERT_TRUE(wire::DecodeMeta(sent.meta, &msg).ok());
  EXPECT_EQ(msg.sha256, spec.model_sha256);
  EXPECT_EQ(msg.bytes.dtype, wire::DType::kUInt8);
  EXPECT_EQ(msg.bytes.nbytes, bytes.size());
  ASSERT_EQ(sent.data.size(), 1u);
  // No copy: the frame borrows the spec's own bytes.
  EXPECT_EQ(sent.data[0].data, spec.module->data());
  EXPECT_EQ(sent.data[0].bytes, bytes.size());
}

TEST(ModuleEngineTest, NoModuleBeforeAHello) {
  EngineHarness h(Spec("m"), {torch::zeros({4}).requires_grad_()});
  const PeerId peer = h.Accept();
  // Refused from its header: before a hello only a hello is read.
  EXPECT_FALSE(h.Feed(peer, wire::GetModule{}, 1).ok());
  EXPECT_EQ(h.CountSent(peer, wire::MsgType::kModule), 0);
}

TEST(ModuleEngineTest, ABuiltInModelsJobHasNoModule) {
  JobSpec spec;
  spec.world_size = 2;
  EngineHarness h(spec, {torch::zeros({4}).requires_grad_()});
  const PeerId peer = h.Accept();
  ASSERT_TRUE(h.Feed(peer, wire::Hello{wire::Role::kWorker, 1, 2}, 1).ok());
  (void)h.Feed(peer, wire::GetModule{}, 2);
  auto closed = h.ClosedFor(peer);
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->error_frame);
  EXPECT_EQ(closed->why.message(),
            "get_module: the job trains the built-in model net, no module");
}

}  // namespace
}  // namespace pstrain::ps
