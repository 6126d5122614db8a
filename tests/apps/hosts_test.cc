// pstrain across hosts joined by real links, as on one: every rank runs in
// a host of its own (testing/net_hosts.h: network namespaces on a bridge,
// tbf-shaped links) and reaches rank 0 at that host's address, over the
// links. A host that dies mid-run, authentication, compression, sparse
// rows, the model on the server, a killed worker, a restarted server,
// shared memory beside TCP in one job, and the link's order. Skipped where
// network namespaces cannot be made (not root, no `ip`).

#include <signal.h>

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "job_test.h"
#include "models/model_zoo.h"
#include "ps/rank/checkpoint_rotation.h"
#include "testing/idx_files.h"
#include "testing/net_hosts.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

constexpr double kWait = 60;  // seconds any process of a job may take

// Bytes of mlp's float32 parameters: what one uncompressed push carries.
double MlpParamBytes() {
  auto model = models::MakeModel("mlp");
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  double bytes = 0;
  for (const auto& p : (*model)->parameters())
    bytes += static_cast<double>(p.numel()) * 4;
  return bytes;
}

// Whether rank 0's log says `rank` joined from host address `addr`: its
// connection came over the links.
bool JoinedFrom(const std::string& err, int rank, const std::string& addr) {
  return err.find("rank " + std::to_string(rank) + " joined from " + addr +
                  ":") != std::string::npos;
}

// The run ended as with a lost worker: rank 0's summary counts one lost
// and its `steps`, and `other` finished all of them.
void ExpectOneLostAndTheOtherFinished(const ProcessResult& rank0,
                                      Process& other, int steps) {
  const auto summary = FindEvent(rank0.out, "summary");
  EXPECT_EQ(summary["workers_lost"], 1) << summary;
  EXPECT_EQ(summary["steps"], steps) << summary;
  const ProcessResult r = other.Wait(kWait);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(FindEvent(r.out, "summary")["steps"], steps) << r.out;
}

// A slowed worker's flags that hold it before step `step` until the file
// `go` exists: the run is alive for what the test does before creating
// it, on a machine of any speed.
std::vector<std::string> HoldAt(int step, const std::string& go) {
  return {"--hold_before_step", std::to_string(step), "--hold_until", go};
}

// Host `h` dies as a machine does, saying nothing: its link goes down
// before `process` in it is killed, so no FIN or RST leaves it.
void DieSilently(const NetHosts& hosts, int h, Process& process) {
  const ProcessResult down =
      hosts.Run(h, {"ip", "link", "set", "eth0", "down"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  process.Signal(SIGKILL);
  EXPECT_EQ(process.Wait(10).exit_code, 128 + SIGKILL);
}

class HostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NetHosts::Unavailable();
    if (!why.empty())
      GTEST_SKIP() << "no hosts joined by links here: " << why;
    data::testing::WriteTinyDataset(dir_.path(), 640, 100);
  }

  // Rank 0 of a job of `world` ranks in host `h`, listening at its address
  // on `port` ("0": one the kernel picks); `job`: the job's flags.
  std::vector<std::string> Serve(const NetHosts& hosts, int h, int world,
                                 const std::vector<std::string>& job,
                                 const std::string& port = "0") const {
    return hosts.Cmd(
        h, Concat({PstrainBin(), "serve", "--rank", "0", "--world_size",
                   std::to_string(world), "--master_addr", hosts.Addr(h),
                   "--master_port", port, "--checkpoint", dir_.File("m.pt"),
                   "--data_dir", dir_.path(), "--threads", "1", "--timeout",
                   "30", "--json"},
                  job));
  }
  // Server rank 1 of 2, in host 1, of rank 0 in host 0 at `port`.
  std::vector<std::string> ServeRank1(const NetHosts& hosts, int world,
                                      int port) const {
    return hosts.Cmd(
        1, {PstrainBin(), "serve", "--rank", "1", "--world_size",
            std::to_string(world), "--num_servers", "2", "--master_addr",
            hosts.Addr(0), "--master_port", std::to_string(port), "--data_dir",
            dir_.path(), "--threads", "1", "--timeout", "30", "--json"});
  }
  // Worker `rank` in host `h`, of rank 0 in host 0 at `port`; slowed by
  // `delay_ms` per step (pstrain_testing) when above 0.
  std::vector<std::string> Work(
      const NetHosts& hosts, int h, int rank, int world, int port,
      int delay_ms = 0, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> argv = {
        delay_ms > 0 ? PstrainTestingBin() : PstrainBin(),
        "work",
        "--rank",
        std::to_string(rank),
        "--world_size",
        std::to_string(world),
        "--master_addr",
        hosts.Addr(0),
        "--master_port",
        std::to_string(port),
        "--data_dir",
        dir_.path(),
        "--threads",
        "1",
        "--timeout",
        "30",
        "--json"};
    if (delay_ms > 0)
      argv = Concat(argv, {"--delay_ms", std::to_string(delay_ms)});
    return hosts.Cmd(h, Concat(argv, extra));
  }

  ScratchDir dir_;
};

const std::vector<std::string> kMlp = {"--model", "mlp", "--batch_size", "8"};

// A machine that dies says nothing: its link goes down before its worker
// is killed, so no FIN or RST reaches rank 0, which hears nothing more
// from it and loses it after --dead_after; the other worker finishes.
TEST_F(HostsTest, AWorkersHostThatDiesIsLostAfterDeadAfter) {
  NetHosts hosts(3);
  ASSERT_TRUE(hosts.ok());
  Process serve(
      Serve(hosts, 0, 3,
            Concat(kMlp, {"--max_steps", "30", "--dead_after", "2",
                          "--heartbeat", "0.5", "--log_interval", "1"})));
  const int port = serve.ListenPort(30);
  ASSERT_GT(port, 0);
  const std::string go = dir_.File("go");
  Process w1(Work(hosts, 1, 1, 3, port, 100, HoldAt(20, go)));
  Process w2(Work(hosts, 2, 2, 3, port, 100, HoldAt(20, go)));
  ASSERT_TRUE(w2.WaitForErr("step 5/30", kWait)) << w2.OutSoFar();
  DieSilently(hosts, 2, w2);
  ASSERT_TRUE(serve.WaitForErr("rank 2 lost at version", kWait));
  std::ofstream(go).close();

  const ProcessResult rs = serve.Wait(kWait);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_TRUE(JoinedFrom(rs.err, 2, hosts.Addr(2))) << rs.err;
  // Lost for its silence, not for a closed connection: rank 0 heard no
  // frame from it for 2 s, or (while it held its reply) the kernel had no
  // acknowledgement for 2 s.
  const size_t lost = rs.err.find("rank 2 lost at version");
  ASSERT_NE(lost, std::string::npos) << rs.err;
  const std::string line = rs.err.substr(lost, rs.err.find('\n', lost) - lost);
  EXPECT_TRUE(rs.err.find("no word from rank 2 for 2 s") != std::string::npos ||
              line.find("Connection timed out") != std::string::npos)
      << rs.err;
  ExpectOneLostAndTheOtherFinished(rs, w1, 30);
}

// --auth_token_file: workers with a wrong token or none are refused over
// the link; one with the token trains the whole run.
TEST_F(HostsTest, AuthTokenAdmitsOnlyWorkersThatKnowIt) {
  NetHosts hosts(2);
  ASSERT_TRUE(hosts.ok());
  std::ofstream(dir_.File("token")) << "correct horse battery staple\n";
  std::ofstream(dir_.File("wrong")) << "incorrect horse\n";
  Process serve(Serve(hosts, 0, 2,
                      Concat(kMlp, {"--max_steps", "10", "--auth_token_file",
                                    dir_.File("token")})));
  const int port = serve.ListenPort(30);
  ASSERT_GT(port, 0);
  const ProcessResult wrong =
      Process(Work(hosts, 1, 1, 2, port, 0,
                   {"--auth_token_file", dir_.File("wrong")}))
          .Wait(kWait);
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(
      wrong.err.find("the server could not prove it knows the auth token"),
      std::string::npos)
      << wrong.err;
  const ProcessResult none = Process(Work(hosts, 1, 1, 2, port)).Wait(kWait);
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("authentication required"), std::string::npos)
      << none.err;
  const ProcessResult good =
      Process(Work(hosts, 1, 1, 2, port, 0,
                   {"--auth_token_file", dir_.File("token")}))
          .Wait(kWait);
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(FindEvent(good.out, "summary")["steps"], 10) << good.out;
  const ProcessResult rs = serve.Wait(kWait);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_TRUE(JoinedFrom(rs.err, 1, hosts.Addr(1))) << rs.err;
  EXPECT_EQ(FindEvent(rs.out, "summary")["steps"], 10);
}

// topk:0.01 pushes and fp16 pulls cross the links: the pushes carry a few
// percent of mlp's float32 gradients, the pulls half its parameters.
TEST_F(HostsTest, CompressedPushesAndPullsCarryTheirShare) {
  NetHosts hosts(2);
  ASSERT_TRUE(hosts.ok());
  constexpr int kSteps = 10;
  Process serve(Serve(
      hosts, 0, 3,
      Concat(kMlp, {"--max_steps", std::to_string(kSteps), "--compression",
                    "topk:0.01", "--pull_compression", "fp16"})));
  const int port = serve.ListenPort(30);
  ASSERT_GT(port, 0);
  Process w1(Work(hosts, 1, 1, 3, port));
  Process w2(Work(hosts, 1, 2, 3, port));
  const ProcessResult rs = serve.Wait(kWait);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_EQ(w1.Wait(kWait).exit_code, 0);
  EXPECT_EQ(w2.Wait(kWait).exit_code, 0);
  EXPECT_TRUE(JoinedFrom(rs.err, 2, hosts.Addr(1))) << rs.err;
  const auto summary = FindEvent(rs.out, "summary");
  EXPECT_EQ(summary["steps"], kSteps) << summary;
  const double raw = MlpParamBytes();
  // Two workers, kSteps pushes and kSteps + 1 pulls each.
  const double pushed = summary["bytes_pushed"].get<double>() / (2 * kSteps);
  const double pulled =
      summary["bytes_pulled"].get<double>() / (2 * (kSteps + 1));
  EXPECT_LT(pushed, 0.04 * raw) << summary;
  EXPECT_GT(pushed, 0.01 * raw) << summary;
  EXPECT_LT(pulled, 0.55 * raw) << summary;
  EXPECT_GT(pulled, 0.45 * raw) << summary;
}

// lstm_lm's embedding rows travel alone over the links: fewer than the
// table's rows each step, both ways.
TEST_F(HostsTest, SparseRowsTravelAlone) {
  NetHosts hosts(2);
  ASSERT_TRUE(hosts.ok());
  WriteTinyCorpus(dir_.path());
  constexpr int kSteps = 12;
  Process serve(Serve(
      hosts, 0, 3,
      {"--model", "lstm_lm", "--vocab_size", "30", "--bptt", "5", "--embed_dim",
       "8", "--hidden_dim", "16", "--num_layers", "1", "--batch_size", "4",
       "--epochs", "3", "--max_steps", std::to_string(kSteps)}));
  const int port = serve.ListenPort(30);
  ASSERT_GT(port, 0);
  Process w1(Work(hosts, 1, 1, 3, port));
  Process w2(Work(hosts, 1, 2, 3, port));
  const ProcessResult rs = serve.Wait(kWait);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_TRUE(JoinedFrom(rs.err, 1, hosts.Addr(1))) << rs.err;
  const auto summary = FindEvent(rs.out, "summary");
  EXPECT_EQ(summary["steps"], kSteps) << summary;
  EXPECT_TRUE(summary.contains("test_perplexity")) << summary;
  for (Process* w : {&w1, &w2}) {
    const ProcessResult r = w->Wait(kWait);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto s = FindEvent(r.out, "summary");
    EXPECT_EQ(s["steps"], kSteps) << s;
    // The table has 31 rows (30 words and <unk>).
    EXPECT_GT(s["sparse_rows_pushed_per_step"].get<double>(), 0) << s;
    EXPECT_LT(s["sparse_rows_pushed_per_step"].get<double>(), 31) << s;
    EXPECT_GT(s["sparse_rows_pulled_per_step"].get<double>(), 0) << s;
    EXPECT_LT(s["sparse_rows_pulled_per_step"].get<double>(), 31) << s;
    EXPECT_GT(s["sparse_bytes_saved"].get<uint64_t>(), 0u) << s;
  }
}

// --placement server: the workers send their batches over the links, not
// gradients; the server computes and steps.
TEST_F(HostsTest, ModelOnTheServerGetsBatches) {
  NetHosts hosts(2);
  ASSERT_TRUE(hosts.ok());
  constexpr int kSteps = 10;
  Process serve(Serve(hosts, 0, 3,
                      Concat(kMlp, {"--max_steps", std::to_string(kSteps),
                                    "--placement", "server"})));
  const int port = serve.ListenPort(30);
  ASSERT_GT(port, 0);
  Process w1(Work(hosts, 1, 1, 3, port));
  Process w2(Work(hosts, 1, 2, 3, port));
  const ProcessResult rs = serve.Wait(kWait);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_TRUE(JoinedFrom(rs.err, 2, hosts.Addr(1))) << rs.err;
  EXPECT_EQ(FindEvent(rs.out, "summary")["steps"], kSteps) << rs.out;
  const double raw = MlpParamBytes();
  for (Process* w : {&w1, &w2}) {
    const ProcessResult r = w->Wait(kWait);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto s = FindEvent(r.out, "summary");
    EXPECT_EQ(s["steps"], kSteps) << s;
    // 8 images of 28 x 28 a step, against mlp's 0.8 MB of gradients.
    EXPECT_LT(s["bytes_pushed"].get<double>() / kSteps, raw / 10) << s;
    EXPECT_GT(s["bytes_pushed"].get<double>() / kSteps, 8 * 28 * 28) << s;
  }
}

// A worker killed (its host alive: the kernel closes its connection) is
// lost at once; the other finishes the run.
TEST_F(HostsTest, KilledWorkerIsLostAndTheOtherFinishes) {
  NetHosts hosts(2);
  ASSERT_TRUE(hosts.ok());
  Process serve(Serve(
      hosts, 0, 3, Concat(kMlp, {"--max_steps", "20", "--log_interval", "1"})));
  const int port = serve.ListenPort(30);
  ASSERT_GT(port, 0);
  const std::string go = dir_.File("go");
  Process w1(Work(hosts, 1, 1, 3, port, 50, HoldAt(15, go)));
  Process w2(Work(hosts, 1, 2, 3, port, 50, HoldAt(15, go)));
  ASSERT_TRUE(w2.WaitForErr("step 3/20", kWait)) << w2.OutSoFar();
  w2.Signal(SIGKILL);
  EXPECT_EQ(w2.Wait(10).exit_code, 128 + SIGKILL);
  ASSERT_TRUE(serve.WaitForErr("rank 2 lost at version", kWait));
  std::ofstream(go).close();
  const ProcessResult rs = serve.Wait(kWait);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_NE(rs.err.find("rank 2 lost at version"), std::string::npos) << rs.err;
  // Lost when its connection closed, long before the default --dead_after.
  EXPECT_EQ(rs.err.find("no word from rank 2"), std::string::npos) << rs.err;
  ExpectOneLostAndTheOtherFinished(rs, w1, 20);
}

// Rank 0 killed mid-run and started again on its host with --resume auto:
// it goes on from its newest periodic checkpoint, the workers reconnect
// over the links, and the run finishes.
TEST_F(HostsTest, RestartedServerResumesAndWorkersReconnect) {
  NetHosts hosts(2);
  ASSERT_TRUE(hosts.ok());
  const std::vector<std::string> job = Concat(
      kMlp,
      {"--max_steps", "30", "--checkpoint_every", "5", "--resume", "auto"});
  Process first(Serve(hosts, 0, 3, job));
  const int port = first.ListenPort(30);
  ASSERT_GT(port, 0);
  // The workers hold before step 25 until rank 0 is killed.
  const std::string go = dir_.File("go");
  const std::vector<std::string> reconnect =
      Concat({"--reconnect_timeout", "30"}, HoldAt(25, go));
  Process w1(Work(hosts, 1, 1, 3, port, 100, reconnect));
  Process w2(Work(hosts, 1, 2, 3, port, 100, reconnect));
  // Killed once a periodic checkpoint is complete.
  const std::string base = dir_.File("m.pt");
  ASSERT_FALSE(WaitForCheckpoint(base, 30).second.empty());
  first.Signal(SIGKILL);
  EXPECT_EQ(first.Wait(10).exit_code, 128 + SIGKILL);
  std::ofstream(go).close();
  const auto saved = ps::CompleteCheckpoints(base).back();
  EXPECT_EQ(saved.first % 5, 0u);
  EXPECT_LT(saved.first, 30u);

  Process second(Serve(hosts, 0, 3, job, std::to_string(port)));
  const ProcessResult rs = second.Wait(kWait);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_NE(rs.err.find("--resume auto: " + saved.second), std::string::npos)
      << rs.err;
  EXPECT_TRUE(JoinedFrom(rs.err, 1, hosts.Addr(1))) << rs.err;
  EXPECT_EQ(FindEvent(rs.out, "summary")["steps"], 30) << rs.out;
  for (Process* w : {&w1, &w2}) {
    const ProcessResult r = w->Wait(kWait);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("reconnected; going on from version " +
                         std::to_string(saved.first)),
              std::string::npos)
        << r.err;
    const auto s = FindEvent(r.out, "summary");
    EXPECT_EQ(s["reconnects"], 1) << s;
    EXPECT_EQ(s["version"], 30) << s;
  }
}

// A server's host that goes silent (its link down, then its process
// killed: no FIN, no RST) is found by the kernel's probes after
// --dead_after on every connection to it (net::WatchPeerHost): rank 0
// loses it, rank 0's standby of its shard takes over, and the workers
// send the step again there. The run ends as the same run without the
// failure does, to the last digit of its test loss.
TEST_F(HostsTest, AServersHostThatGoesSilentIsTakenOverByItsStandby) {
  NetHosts hosts(3);
  ASSERT_TRUE(hosts.ok());
  const std::vector<std::string> job =
      Concat(kMlp, {"--num_servers", "2", "--replicas", "2", "--max_steps",
                    "40", "--dead_after", "2", "--heartbeat", "0.5"});
  std::string log;  // rank 0's, of the last run
  auto run = [&](bool silence) -> double {
    Process serve(Serve(hosts, 0, 4, job));
    const int port = serve.ListenPort(30);
    EXPECT_GT(port, 0);
    Process server1(ServeRank1(hosts, 4, port));
    // The workers hold before step 30 until server 1 has gone silent.
    const std::string go = dir_.File(silence ? "go-silent" : "go");
    Process w2(Work(hosts, 2, 2, 4, port, 50, HoldAt(30, go)));
    Process w3(Work(hosts, 2, 3, 4, port, 50, HoldAt(30, go)));
    if (silence) {
      EXPECT_TRUE(w2.WaitForErr("step 10/40", kWait)) << w2.OutSoFar();
      DieSilently(hosts, 1, server1);
    }
    std::ofstream(go).close();
    const ProcessResult rs = serve.Wait(2 * kWait);
    EXPECT_EQ(rs.exit_code, 0) << rs.err;
    for (Process* w : {&w2, &w3}) {
      const ProcessResult r = w->Wait(kWait);
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    if (silence) {
      EXPECT_NE(rs.err.find("lost rank 1 (server)"), std::string::npos)
          << rs.err;
      EXPECT_NE(rs.err.find("standby of rank 1: took its shard over"),
                std::string::npos)
          << rs.err;
    } else {
      const ProcessResult r1 = server1.Wait(kWait);
      EXPECT_EQ(r1.exit_code, 0) << r1.err;
    }
    const auto summary = FindEvent(rs.out, "summary");
    EXPECT_EQ(summary["steps"], 40) << summary;
    log = rs.err;
    return summary["test_loss"].get<double>();
  };
  const double uninterrupted = run(false);
  EXPECT_EQ(run(true), uninterrupted) << log;
}

// A server and a worker on each of two hosts, the layout where the link's
// order (--push_first) holds replies for pushes: it changes when bytes
// leave, never what is computed, so sync ends where it ends without it.
TEST_F(HostsTest, PushesFirstOrderTheLinkWithoutChangingTheRun) {
  NetHosts hosts(2);
  ASSERT_TRUE(hosts.ok());
  auto run = [&](const std::string& push_first) -> double {
    Process serve(Serve(hosts, 0, 4,
                        Concat(kMlp, {"--num_servers", "2", "--max_steps", "30",
                                      "--push_first=" + push_first})));
    const int port = serve.ListenPort(30);
    EXPECT_GT(port, 0);
    Process server1(ServeRank1(hosts, 4, port));
    Process w2(Work(hosts, 0, 2, 4, port));
    Process w3(Work(hosts, 1, 3, 4, port));
    const ProcessResult rs = serve.Wait(2 * kWait);
    EXPECT_EQ(rs.exit_code, 0) << rs.err;
    // Each worker reaches its own host's server over shared memory.
    const std::string via[] = {"", "to rank 0: shared memory",
                               "to rank 1: shared memory"};
    Process* ranks[] = {&server1, &w2, &w3};
    for (int i = 0; i < 3; ++i) {
      const ProcessResult r = ranks[i]->Wait(kWait);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.err.find(via[i]), std::string::npos) << r.err;
    }
    const auto summary = FindEvent(rs.out, "summary");
    EXPECT_EQ(summary["steps"], 30) << summary;
    return summary["test_loss"].get<double>();
  };
  EXPECT_EQ(run("true"), run("false"));
}

// --transport auto in one job: the worker on rank 0's host moves to shared
// memory, the one on another host stays on TCP, saying why.
TEST_F(HostsTest, SharedMemoryOnOneHostAndTcpAcrossInOneJob) {
  NetHosts hosts(2);
  ASSERT_TRUE(hosts.ok());
  Process serve(Serve(hosts, 0, 3, Concat(kMlp, {"--max_steps", "10"})));
  const int port = serve.ListenPort(30);
  ASSERT_GT(port, 0);
  Process w1(Work(hosts, 0, 1, 3, port));
  Process w2(Work(hosts, 1, 2, 3, port));
  const ProcessResult rs = serve.Wait(kWait);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_TRUE(JoinedFrom(rs.err, 1, hosts.Addr(0))) << rs.err;
  EXPECT_TRUE(JoinedFrom(rs.err, 2, hosts.Addr(1))) << rs.err;
  EXPECT_EQ(FindEvent(rs.out, "summary")["steps"], 10) << rs.out;
  const ProcessResult r1 = w1.Wait(kWait), r2 = w2.Wait(kWait);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_NE(r1.err.find("to rank 0: shared memory"), std::string::npos)
      << r1.err;
  EXPECT_NE(r2.err.find("to rank 0: TCP (no shared memory: the worker is on "
                        "another host)"),
            std::string::npos)
      << r2.err;
  EXPECT_EQ(FindEvent(r1.out, "summary")["steps"], 10);
  EXPECT_EQ(FindEvent(r2.out, "summary")["steps"], 10);
}

}  // namespace
}  // namespace pstrain::testing
