// The master's roles move across hosts under etcd (--rdzv_backend etcd):
// rank 0 and server 1 each in a host of their own, started by hand, a
// worker beside each, and a real etcd (Debian's etcd-server) in a third
// host. Rank 0 killed, or stopped past its lease, mid-run: server 1's
// standby of rank 0's shard takes the master's key and roles over, every
// rank finds it in etcd, and the run ends as the run without the fault
// does, bit for bit. Skipped where network namespaces cannot be made or
// etcd is not installed.

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"
#include "testing/net_hosts.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

constexpr double kWait = 60;  // seconds any process of a job may take
constexpr char kEtcd[] = "/usr/bin/etcd";
constexpr int kSteps = 40;
// The hosts: rank 0 and worker 2 in one, server 1 and worker 3 in
// another, etcd in the third.
constexpr int kMasterHost = 0;
constexpr int kServerHost = 1;
constexpr int kEtcdHost = 2;

enum class Fault { kNone, kKill, kStop };

class EtcdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NetHosts::Unavailable();
    if (!why.empty())
      GTEST_SKIP() << "no hosts joined by links here: " << why;
    if (access(kEtcd, X_OK) != 0)
      GTEST_SKIP() << "no etcd here (install-deps.sh --test installs it)";
    data::testing::WriteTinyDataset(dir_.path(), 640, 100);
  }

  // etcd alone in its host: the host is a network namespace this test
  // made, so its client port (etcd's own, 2379) is free by construction.
  std::vector<std::string> Etcd(const NetHosts& hosts) const {
    const std::string client = "http://" + hosts.Addr(kEtcdHost) + ":2379";
    const std::string peer = "http://127.0.0.1:2380";
    return hosts.Cmd(
        kEtcdHost,
        {kEtcd, "--data-dir", dir_.File("etcd"), "--listen-client-urls", client,
         "--advertise-client-urls", client, "--listen-peer-urls", peer,
         "--initial-advertise-peer-urls", peer, "--initial-cluster",
         "default=" + peer});
  }

  // What every rank of the run named `id` in etcd is given.
  std::vector<std::string> Rdzv(const NetHosts& hosts,
                                const std::string& id) const {
    return {"--rdzv_backend",  "etcd",
            "--rdzv_endpoint", hosts.Addr(kEtcdHost) + ":2379",
            "--rdzv_id",       id,
            "--data_dir",      dir_.path(),
            "--threads",       "1",
            "--timeout",       "30",
            "--json"};
  }

  // Server `rank` of 2 in host `h`; rank 0 listens at its host's address
  // on a port the kernel picks, and says so in etcd.
  std::vector<std::string> Serve(const NetHosts& hosts, int h, int rank,
                                 const std::string& id) const {
    std::vector<std::string> argv = {
        PstrainBin(),   "serve", "--rank",        std::to_string(rank),
        "--world_size", "4",     "--num_servers", "2",
        "--replicas",   "2",     "--model",       "mlp",
        "--batch_size", "8",     "--max_steps",   std::to_string(kSteps),
        "--seed",       "3",     "--dead_after",  "2",
        "--heartbeat",  "0.5",   "--checkpoint",  dir_.File(id + ".pt")};
    if (rank == 0) {
      argv =
          Concat(argv, {"--master_addr", hosts.Addr(h), "--master_port", "0"});
    }
    return hosts.Cmd(h, Concat(argv, Rdzv(hosts, id)));
  }

  // Worker `rank` in host `h`, slowed by 50 ms a step and held before
  // step 30 until `go` exists: the run is alive for the fault on a
  // machine of any speed. No master address: it is in etcd.
  std::vector<std::string> Work(const NetHosts& hosts, int h, int rank,
                                const std::string& id,
                                const std::string& go) const {
    return hosts.Cmd(
        h, Concat({PstrainTestingBin(), "work", "--rank", std::to_string(rank),
                   "--world_size", "4", "--delay_ms", "50",
                   "--hold_before_step", "30", "--hold_until", go},
                  Rdzv(hosts, id)));
  }

  struct Outcome {
    ProcessResult master;  // rank 0's
    ProcessResult server;  // server 1's
    std::string checkpoint;
  };

  // One run named `id`, with `fault` done to rank 0 at step 10 or later.
  Outcome Run(const NetHosts& hosts, const std::string& id, Fault fault) {
    const std::string go = dir_.File(id + "-go");
    Process master(Serve(hosts, kMasterHost, 0, id));
    Process server(Serve(hosts, kServerHost, 1, id));
    Process w2(Work(hosts, kMasterHost, 2, id, go));
    Process w3(Work(hosts, kServerHost, 3, id, go));
    if (fault != Fault::kNone) {
      EXPECT_TRUE(w2.WaitForErr("step 10/40", kWait)) << w2.OutSoFar();
      if (fault == Fault::kKill) {
        master.Signal(SIGKILL);
      } else {
        // Stopped past its lease (--dead_after 2 s) until the standby
        // took the key and both workers moved to it, as a stop of three
        // times --dead_after would: the master then resumes with no
        // worker waiting on it (share/doc/design.md, "Replicas", Not
        // built: one still waiting could be answered first).
        master.Signal(SIGSTOP);
        EXPECT_TRUE(server.WaitForErr("is the master now", kWait));
        for (Process* w : {&w2, &w3}) {
          EXPECT_TRUE(
              w->WaitForErr("again to the standby that took over", kWait));
        }
        master.Signal(SIGCONT);
      }
    }
    std::ofstream(go).close();
    Outcome out;
    out.master = master.Wait(2 * kWait);
    out.server = server.Wait(2 * kWait);
    for (Process* w : {&w2, &w3}) {
      const ProcessResult r = w->Wait(kWait);
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    out.checkpoint = dir_.File(id + ".pt");
    return out;
  }

  // The run after a fault: one summary, server 1's, of every step, and
  // the checkpoint of the run without it.
  void ExpectTheSameRun(const Outcome& whole, const Outcome& faulted) {
    ASSERT_EQ(faulted.server.exit_code, 0)
        << faulted.server.err << "\nrank 0's:\n"
        << faulted.master.err;
    EXPECT_NE(faulted.server.err.find("named the master by the arbiter"),
              std::string::npos)
        << faulted.server.err;
    EXPECT_TRUE(FindEvents(faulted.master.out, "summary").empty());
    const auto summaries = FindEvents(faulted.server.out, "summary");
    ASSERT_EQ(summaries.size(), 1u) << faulted.server.out;
    const auto& summary = summaries.front();
    EXPECT_EQ(summary["steps"], kSteps) << summary;
    EXPECT_EQ(summary["checkpoint_version"], kSteps) << summary;
    const auto expected = FindEvent(whole.master.out, "summary");
    EXPECT_EQ(summary["test_loss"], expected["test_loss"]);
    EXPECT_EQ(summary["test_accuracy"], expected["test_accuracy"]);
    EXPECT_EQ(MaxAbsDiff(whole.checkpoint, faulted.checkpoint), 0.0);
  }

  // In `hosts`, with etcd in the third: the run without a fault, then
  // the run `id` with `fault`. Fails the test where the first fails.
  Outcome WholeThen(const NetHosts& hosts, const std::string& id, Fault fault) {
    Process etcd(Etcd(hosts));
    EXPECT_TRUE(etcd.WaitForErr("ready to serve client requests", kWait));
    whole_ = Run(hosts, "whole", Fault::kNone);
    EXPECT_EQ(whole_.master.exit_code, 0) << whole_.master.err;
    Outcome faulted = Run(hosts, id, fault);
    etcd.Signal(SIGTERM);
    etcd.Wait(kWait);
    return faulted;
  }

  ScratchDir dir_;
  Outcome whole_;  // WholeThen's run without a fault
};

TEST_F(EtcdTest, AKilledMasterIsSucceededOnAnotherHostAndTheRunIsUnchanged) {
  NetHosts hosts(3);
  ASSERT_TRUE(hosts.ok());
  const Outcome killed = WholeThen(hosts, "killed", Fault::kKill);
  EXPECT_EQ(killed.master.exit_code, 128 + SIGKILL);
  ExpectTheSameRun(whole_, killed);
  // Found in etcd: the successor listens on its own host.
  EXPECT_NE(killed.server.err.find("is the master now: serves rank 0's shard "
                                   "from version"),
            std::string::npos);
  EXPECT_NE(killed.server.err.find(" at " + hosts.Addr(kServerHost) + ":"),
            std::string::npos)
      << killed.server.err;
}

// A master stopped past its lease is fenced by etcd: once it resumes, its
// next renewal finds the lease gone and it exits with one line naming
// its term, having served nothing more; the successor's run is the run.
TEST_F(EtcdTest, AStoppedMasterExitsOnResumingNamingItsTerm) {
  NetHosts hosts(3);
  ASSERT_TRUE(hosts.ok());
  const Outcome stopped = WholeThen(hosts, "stopped", Fault::kStop);
  EXPECT_EQ(stopped.master.exit_code, 1) << stopped.master.err;
  EXPECT_NE(stopped.master.err.find("lost the master's lease in etcd (term "),
            std::string::npos)
      << stopped.master.err;
  ExpectTheSameRun(whole_, stopped);
}

}  // namespace
}  // namespace pstrain::testing
