// Bad peers, bad input and missing peers, with real processes: each ends
// with the documented exit status and a one-line message naming the problem.

#include <random>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// The one error line ("pstrain: error: ...") of a process's stderr.
std::string ErrorLine(const std::string& err) {
  auto at = err.find("pstrain: error: ");
  if (at == std::string::npos)
    return "";
  return err.substr(at, err.find('\n', at) - at);
}

class FailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data::testing::WriteTinyDataset(dir_.path(), 320, 50);
  }
  std::vector<std::string> World(int world_size, const std::string& port) {
    return {"--world_size",  std::to_string(world_size),
            "--master_port", port,
            "--master_addr", "127.0.0.1",
            "--data_dir",    dir_.path()};
  }
  std::vector<std::string> Serve(int world_size, const std::string& port,
                                 std::vector<std::string> extra = {}) {
    return Concat(
        Concat({PstrainBin(), "serve", "--model", "mlp", "--max_steps", "10",
                "--batch_size", "8", "--checkpoint", dir_.File("m.pt")},
               World(world_size, port)),
        extra);
  }
  std::vector<std::string> Work(int rank, int world_size,
                                const std::string& port,
                                std::vector<std::string> extra = {},
                                const std::string& bin = PstrainBin()) {
    return Concat(Concat({bin, "work", "--rank", std::to_string(rank)},
                         World(world_size, port)),
                  extra);
  }
  ScratchDir dir_;
};

TEST_F(FailureTest, MissingWorkerTimesOutNamingItsRank) {
  Process serve(Serve(3, "0", {"--timeout", "2"}));
  const std::string port = std::to_string(serve.ListenPort(30));
  Process worker(Work(1, 3, port, {"--timeout", "2"}));
  auto rs = serve.Wait(30);
  EXPECT_EQ(rs.exit_code, 1) << rs.err;
  EXPECT_LT(rs.seconds, 15);
  EXPECT_EQ(
      ErrorLine(rs.err),
      "pstrain: error: timed out after 2 s waiting for rank 2 to connect");
  auto rw = worker.Wait(30);
  EXPECT_EQ(rw.exit_code, 1) << rw.err;
  EXPECT_NE(ErrorLine(rw.err).find("rank 2"), std::string::npos) << rw.err;
}

TEST_F(FailureTest, RandomBytesDropOnlyThatConnection) {
  Process serve(Serve(3, "0", {"--json"}));
  const std::string port = std::to_string(serve.ListenPort(30));
  {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    asio::ip::tcp::resolver resolver(io);
    asio::error_code ec;
    asio::connect(s, resolver.resolve("127.0.0.1", port), ec);
    ASSERT_FALSE(ec) << ec.message();
    std::mt19937 rng(7);
    std::string junk(4096, '\0');
    for (auto& c : junk)
      c = static_cast<char>(rng());
    asio::write(s, asio::buffer(junk), ec);
  }
  Process w1(Work(1, 3, port));
  Process w2(Work(2, 3, port));
  auto rs = serve.Wait(60);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_NE(rs.err.find("dropped connection from 127.0.0.1"), std::string::npos)
      << rs.err;
  EXPECT_NE(rs.err.find("magic"), std::string::npos) << rs.err;
  EXPECT_EQ(FindEvent(rs.out, "summary")["steps"], 10);
  EXPECT_EQ(w1.Wait(30).exit_code, 0);
  EXPECT_EQ(w2.Wait(30).exit_code, 0);
}

TEST_F(FailureTest, MismatchedWorldSizeIsUsageError) {
  Process serve(Serve(3, "0"));
  const std::string port = std::to_string(serve.ListenPort(30));
  auto rw = Process(Work(1, 4, port)).Wait(30);
  EXPECT_EQ(rw.exit_code, 2) << rw.err;
  EXPECT_EQ(ErrorLine(rw.err),
            "pstrain: error: --world_size mismatch: rank 1 has 4, the server "
            "(rank 0) has 3");
}

TEST_F(FailureTest, WorkerWithAnotherModelIsRefused) {
  Process serve(Serve(3, "0"));
  const std::string port = std::to_string(serve.ListenPort(30));
  auto rw = Process(Work(1, 3, port, {"--model_override", "convnet"},
                         PstrainTestingBin()))
                .Wait(30);
  EXPECT_EQ(rw.exit_code, 2) << rw.err;
  EXPECT_EQ(ErrorLine(rw.err),
            "pstrain: error: model differs at key 0 'fc1.weight' (worker: "
            "'conv1.weight'): "
            "server has float32 [256,784], worker has float32 [3,1,3,3]");
}

TEST_F(FailureTest, MissingDataDirectoryIsUsageError) {
  for (const char* cmd : {"serve", "launch"}) {
    auto r = RunPstrain({cmd, "--world_size", "3", "--master_port", "0",
                         "--data_dir", "/nonexistent/fmnist"},
                        60);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    std::string line = ErrorLine(r.err);
    EXPECT_NE(line.find("/nonexistent/fmnist/t10k-images-idx3-ubyte"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("dataset-fashion-mnist"), std::string::npos) << line;
  }
}

TEST_F(FailureTest, PortInUseIsUsageError) {
  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 0});
  const std::string port = std::to_string(taken.local_endpoint().port());
  auto r = Process(Serve(3, port)).Wait(30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(ErrorLine(r.err),
            "pstrain: error: cannot listen on 127.0.0.1:" + port +
                ": Address already in use (--master_port)");
}

TEST_F(FailureTest, BadFlagsAreUsageErrors) {
  auto r = RunPstrain({"serve", "--world_size", "1"}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(ErrorLine(r.err).find("--world_size"), std::string::npos) << r.err;
  r = RunPstrain({"work", "--rank", "5", "--world_size", "3"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(ErrorLine(r.err).find("--rank 5"), std::string::npos) << r.err;
  r = RunPstrain({"launch", "--mode", "bsp"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(ErrorLine(r.err),
            "pstrain: error: --mode 'bsp': expected sync, async or ssp");
  r = RunPstrain({"launch", "--optimizer", "lbfgs"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(ErrorLine(r.err),
            "pstrain: error: --optimizer lbfgs: expected sgd, adam, adamw, "
            "adagrad or rmsprop");
  r = RunPstrain({"launch", "--lr_schedule", "cosine"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(ErrorLine(r.err),
            "pstrain: error: --lr_schedule cosine needs --max_steps");
  r = RunPstrain({"launch", "--betas", "0.9"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(ErrorLine(r.err),
            "pstrain: error: --betas '0.9': expected two numbers B1,B2");
  r = RunPstrain({"serve", "--no_such_flag"}, 30);
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(FailureTest, FailingWorkerStopsLaunchWithItsStatus) {
  auto r = RunPstrain(
      {"launch", "--world_size", "3", "--master_port", "0", "--model", "mlp",
       "--data_dir", dir_.path(), "--batch_size", "1000"},
      60);
  // 2 x 1000 exceeds the 320 samples: the workers exit 2, launch stops rank 0.
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_LT(r.seconds, 30);
  EXPECT_NE(r.err.find("exceeds the 320 training samples"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pstrain::testing
