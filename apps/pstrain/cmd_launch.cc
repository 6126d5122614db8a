// pstrain launch: num_servers servers and the rest workers, all of this same
// binary on this machine, sharing its cores; their output is merged line by
// line.

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "apps/pstrain/build_hooks.h"
#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "apps/pstrain/job_flags.h"
#include "cluster/launcher.h"
#include "net/listener.h"
#include "report/rank_board.h"

namespace pstrain::apps {

namespace {

struct LaunchFlags {
  WorldFlags world;
  JobFlags job;
  LocalFlags local;
  std::string checkpoint = "pstrain-model.pt";
  std::string device = "cpu";
  bool live = false;  // a RankBoard on the terminal; the children send JSON
  bool restart_servers = false;
  int max_restarts = 3;  // torchrun's --max-restarts, per server
  LaunchHook hook;
};

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "pstrain";
}

std::vector<std::string> CommonArgs(const LaunchFlags& f, int rank,
                                    int threads) {
  const auto& w = f.world.world;
  // Flag and value pairs.
  // clang-format off
  std::vector<std::string> a = {
      "--rank", std::to_string(rank), "--world_size", std::to_string(w.world_size),
      "--master_addr", w.master_addr, "--master_port", std::to_string(w.master_port),
      "--num_servers", std::to_string(w.num_servers),
      "--threads", std::to_string(threads), "--timeout", ExactText(f.local.timeout_seconds),
      "--max_frame_bytes", std::to_string(f.local.max_frame_bytes),
      "--log_prefix", "false"};
  // clang-format on
  if (!f.local.data_dir.empty())
    a.insert(a.end(), {"--data_dir", f.local.data_dir});
  if (!f.local.auth_token_file.empty()) {
    a.insert(a.end(), {"--auth_token_file", f.local.auth_token_file});
  }
  if (f.local.metrics_port >= 0) {  // 0: each its own free port
    const int port =
        f.local.metrics_port == 0 ? 0 : f.local.metrics_port + rank;
    a.insert(a.end(), {"--metrics_port", std::to_string(port), "--metrics_addr",
                       f.local.metrics_addr, "--metrics_linger",
                       ExactText(f.local.metrics_linger)});
  }
  // Live: the board draws from the children's events; their human lines
  // would garble it.
  if (!f.local.timeline.empty()) {
    a.insert(a.end(), {"--timeline", f.local.timeline + "/rank-" +
                                         std::to_string(rank) + ".json"});
  }
  if (f.local.json || f.live)
    a.push_back("--json");
  if (f.local.quiet || f.live)
    a.push_back("--quiet");
  return a;
}

std::vector<std::string> ServeArgs(const LaunchFlags& f, int rank,
                                   int threads) {
  std::vector<std::string> a = {SelfExe(), "serve"};
  auto common = CommonArgs(f, rank, threads);
  a.insert(a.end(), common.begin(), common.end());
  auto job = JobFlagArgs(f.job);
  a.insert(a.end(), job.begin(), job.end());
  a.insert(a.end(), {"--checkpoint", f.checkpoint});
  return a;
}

std::vector<std::string> WorkArgs(const LaunchFlags& f, int rank, int threads) {
  std::vector<std::string> a = {SelfExe(), "work"};
  auto common = CommonArgs(f, rank, threads);
  a.insert(a.end(), common.begin(), common.end());
  a.insert(a.end(), {"--device", f.device});
  auto own = f.hook(rank);
  a.insert(a.end(), own.begin(), own.end());
  return a;
}

// Routes the children's lines to `board`: JSON events draw their rows (and
// pass on to stdout with --json), everything else prints above the rows.
void AttachBoard(report::RankBoard* board, bool json,
                 cluster::LaunchOptions* o) {
  o->on_line = [board, json](size_t child, bool from_stderr,
                             const std::string& line) {
    if (!from_stderr) {
      auto event =
          nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (event.is_object() && event.contains("event")) {
        if (json)
          std::cout << line << std::endl;
        board->Event(child, event);
        return;
      }
    }
    board->Line(child, line);
  };
}

// The world, the job, then the flags that need another.
Status CheckLaunch(LaunchFlags& f) {
  PS_RETURN_IF_ERROR(ResolveWorld(&f.world, "launch"));
  PS_RETURN_IF_ERROR(FinishJobSpec(&f.job, f.world.world.world_size,
                                   f.world.world.num_servers));
  return CheckFlagNeeds(f.local.needs);
}

// --timeline DIR: the ranks' files, each on its own clock, which is the
// host's system clock (share/doc/timeline.md), into DIR/timeline.json.
void MergeTimelines(const std::string& dir, int world_size,
                    report::EventLog& log) {
  std::vector<std::string> files;
  for (int r = 0; r < world_size; ++r)
    files.push_back(dir + "/rank-" + std::to_string(r) + ".json");
  Status s = trace::MergeFiles(files, dir + "/timeline.json");
  if (!s.ok())
    log.Info(s.message());
}

int Launch(LaunchFlags& f) {
  Status s = CheckLaunch(f);
  auto log = MakeEventLog(f.local, 0, "launch");
  if (!s.ok())
    return Fail(*log, s);
  auto& w = f.world.world;
  if (w.master_port == 0) {
    auto port = net::PickFreePort(w.master_addr);
    if (!port.ok())
      return Fail(*log, port.status());
    w.master_port = *port;
  }
  const int threads = f.local.threads > 0
                          ? f.local.threads
                          : cluster::ThreadsPerProcess(w.world_size);
  f.live = WantsLiveBoard(f.local);
  std::error_code ec;
  if (!f.local.timeline.empty() &&
      !std::filesystem::create_directories(f.local.timeline, ec) && ec) {
    return Fail(*log, InvalidArgument("--timeline " + f.local.timeline + ": " +
                                      ec.message()));
  }
  cluster::LaunchOptions o;
  o.prefix_stdout = !f.local.json;  // JSON lines carry their rank already
  const bool replicated = f.job.spec.replicas > 1 && w.num_servers > 1;
  for (int r = 0; r < w.num_servers; ++r) {
    // --replicas: a server's standby takes its shard over; rank 0's, which
    // holds the job too, once launch names it master (--rdzv_backend
    // launch). --restart_servers starts a server again as a standby (serve
    // --rejoin), rank 0 too once succeeded, but not once the master has
    // exited.
    const bool survivable = r > 0 && replicated;
    std::vector<std::string> args = ServeArgs(f, r, threads);
    if (replicated)
      args.insert(args.end(), {"--rdzv_backend", "launch"});
    std::vector<std::string> again;
    if (replicated && f.restart_servers) {
      again = args;
      again.push_back("--rejoin");
    }
    o.children.push_back({std::move(args), "rank " + std::to_string(r),
                          survivable, std::move(again),
                          /*ends_job=*/r == 0, f.max_restarts});
  }
  // Rank 0's shard has standbys on ranks 1..R-1 (ps/rank/standby.h), each
  // able to be the master next, in that order.
  for (int r = 1;
       replicated && r < std::min(f.job.spec.replicas, w.num_servers); ++r) {
    o.children[0].successors.push_back(r);
  }
  for (int r = w.num_servers; r < w.world_size; ++r) {
    o.children.push_back(
        {WorkArgs(f, r, threads), "rank " + std::to_string(r)});
  }
  std::vector<std::string> labels;
  for (const auto& child : o.children)
    labels.push_back(child.label);
  report::RankBoard board({&std::cerr, TerminalWidth(), nullptr}, labels);
  if (f.live)
    AttachBoard(&board, f.local.json, &o);
  auto status = cluster::RunChildren(o);
  if (!status.ok())
    return Fail(*log, status.status());
  if (!f.local.timeline.empty())
    MergeTimelines(f.local.timeline, w.world_size, *log);
  return *status;
}

}  // namespace

CheckedCommand SetupLaunchChecked(CLI::App* sub) {
  auto f = std::make_shared<LaunchFlags>();
  AddWorldFlags(sub, &f->world, /*with_rank=*/false);
  f->world.world.world_size = 3;
  f->world.world_size->capture_default_str();
  AddJobFlags(sub, &f->job);
  AddLocalFlags(sub, &f->local);
  sub->add_option("--checkpoint", f->checkpoint, "Where rank 0 saves the model")
      ->capture_default_str();
  sub->add_option("--device", f->device, "Workers' device: cpu, cuda or cuda:i")
      ->capture_default_str();
  const CLI::Option* restart = sub->add_flag(
      "--restart_servers", f->restart_servers,
      "--replicas 2 or more: a server that dies (rank 0 once another "
      "is the master) is started again, to rejoin the job as a standby "
      "of its shard (at most --max_restarts times each)");
  sub->add_option("--max_restarts", f->max_restarts,
                  "--restart_servers: how many times each server may be "
                  "started again (torchrun's max-restarts)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  LaunchFlags* flags = f.get();  // f owns the need: no cycle through it
  f->local.needs.push_back({restart, "--replicas 2 or more",
                            [flags] { return flags->job.spec.replicas >= 2; }});
  f->hook = AddLaunchHooks(sub);
  return {[f] { return CheckLaunch(*f); }, [f] { return Launch(*f); }};
}

RunFn SetupLaunch(CLI::App* sub) {
  return SetupLaunchChecked(sub).run;
}

}  // namespace pstrain::apps
