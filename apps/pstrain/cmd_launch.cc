// pstrain launch: num_servers servers and the rest workers, all of this same
// binary on this machine, sharing its cores; their output is merged line by
// line.

#include <sys/ioctl.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "apps/pstrain/build_hooks.h"
#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
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
  LaunchHook hook;
};

std::string Exact(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "pstrain";
}

std::vector<std::string> CommonArgs(const LaunchFlags& f, int rank, int threads) {
  const auto& w = f.world.world;
  std::vector<std::string> a = {
      "--rank", std::to_string(rank), "--world_size", std::to_string(w.world_size),
      "--master_addr", w.master_addr, "--master_port", std::to_string(w.master_port),
      "--num_servers", std::to_string(w.num_servers),
      "--threads", std::to_string(threads), "--timeout", Exact(f.local.timeout_seconds),
      "--max_frame_bytes", std::to_string(f.local.max_frame_bytes),
      "--log_prefix", "false"};
  if (!f.local.data_dir.empty()) a.insert(a.end(), {"--data_dir", f.local.data_dir});
  if (!f.local.auth_token_file.empty()) {
    a.insert(a.end(), {"--auth_token_file", f.local.auth_token_file});
  }
  // Live: the board draws from the children's events; their human lines
  // would garble it.
  if (f.local.json || f.live) a.push_back("--json");
  if (f.local.quiet || f.live) a.push_back("--quiet");
  return a;
}

std::vector<std::string> ServeArgs(const LaunchFlags& f, int rank, int threads) {
  const auto& s = f.job.spec;
  std::vector<std::string> a = {SelfExe(), "serve"};
  auto common = CommonArgs(f, rank, threads);
  a.insert(a.end(), common.begin(), common.end());
  a.insert(a.end(), {"--model", s.model, "--dataset", s.dataset, "--mode", f.job.mode,
                     "--staleness", std::to_string(s.staleness),
                     "--optimizer", s.optimizer,
                     "--lr", Exact(s.lr), "--momentum", Exact(s.momentum),
                     "--weight_decay", Exact(s.weight_decay),
                     "--betas", Exact(s.betas[0]) + "," + Exact(s.betas[1]),
                     "--eps", Exact(s.eps),
                     "--lr_schedule", s.lr_schedule,
                     "--staleness_lr", s.staleness_lr,
                     "--batch_size", std::to_string(s.batch_size),
                     "--epochs", std::to_string(s.epochs),
                     "--max_steps", std::to_string(s.max_steps),
                     "--seed", std::to_string(s.seed),
                     "--eval_interval", f.job.eval_interval,
                     "--target_accuracy", Exact(s.target_accuracy),
                     "--log_interval", std::to_string(s.log_interval),
                     "--slice_bytes", std::to_string(s.slice_bytes),
                     "--backup_workers", std::to_string(s.backup_workers),
                     "--step_timeout", Exact(s.step_timeout),
                     "--server_threads", std::to_string(s.server_threads),
                     "--heartbeat", Exact(s.heartbeat),
                     "--dead_after", Exact(s.dead_after),
                     "--checkpoint", f.checkpoint});
  if (s.nesterov) a.push_back("--nesterov");
  if (s.reassign_shards) a.push_back("--reassign_shards");
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
void AttachBoard(report::RankBoard* board, bool json, cluster::LaunchOptions* o) {
  o->on_line = [board, json](size_t child, bool from_stderr, const std::string& line) {
    if (!from_stderr) {
      auto event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (event.is_object() && event.contains("event")) {
        if (json) std::cout << line << std::endl;
        board->Event(child, event);
        return;
      }
    }
    board->Line(child, line);
  };
}

int Launch(LaunchFlags& f) {
  Status s = ResolveWorld(&f.world, "launch");
  if (s.ok()) s = FinishJobSpec(&f.job, f.world.world.world_size, f.world.world.num_servers);
  auto log = MakeEventLog(f.local, 0, "launch");
  if (!s.ok()) return Fail(*log, s);
  auto& w = f.world.world;
  if (w.master_port == 0) {
    auto port = net::PickFreePort(w.master_addr);
    if (!port.ok()) return Fail(*log, port.status());
    w.master_port = *port;
  }
  const int threads = f.local.threads > 0 ? f.local.threads
                                          : cluster::ThreadsPerProcess(w.world_size);
  f.live = WantsLiveBoard(f.local);
  cluster::LaunchOptions o;
  o.prefix_stdout = !f.local.json;  // JSON lines carry their rank already
  for (int r = 0; r < w.num_servers; ++r) {
    o.children.push_back({ServeArgs(f, r, threads), "rank " + std::to_string(r)});
  }
  for (int r = w.num_servers; r < w.world_size; ++r) {
    o.children.push_back({WorkArgs(f, r, threads), "rank " + std::to_string(r)});
  }
  std::vector<std::string> labels;
  for (const auto& child : o.children) labels.push_back(child.label);
  report::RankBoard board({&std::cerr, TerminalWidth(), nullptr}, labels);
  if (f.live) AttachBoard(&board, f.local.json, &o);
  auto status = cluster::RunChildren(o);
  if (!status.ok()) return Fail(*log, status.status());
  return *status;
}

}  // namespace

RunFn SetupLaunch(CLI::App* sub) {
  auto f = std::make_shared<LaunchFlags>();
  AddWorldFlags(sub, &f->world, /*with_rank=*/false);
  f->world.world.world_size = 3;
  f->world.world_size->capture_default_str();
  AddJobFlags(sub, &f->job);
  AddLocalFlags(sub, &f->local);
  sub->add_option("--checkpoint", f->checkpoint, "Where rank 0 saves the model")
      ->capture_default_str();
  sub->add_option("--device", f->device, "Workers' device: cpu or cuda")
      ->capture_default_str();
  f->hook = AddLaunchHooks(sub);
  return [f] { return Launch(*f); };
}

}  // namespace pstrain::apps
