// pstrain launch: one server and world_size-1 workers of this same binary on
// this machine, sharing its cores; their output is merged line by line.

#include <unistd.h>

#include <climits>
#include <sstream>

#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "cluster/launcher.h"
#include "net/listener.h"

namespace pstrain::apps {

namespace {

struct LaunchFlags {
  WorldFlags world;
  JobFlags job;
  LocalFlags local;
  std::string checkpoint = "pstrain-model.pt";
  std::string device = "cpu";
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
      "--threads", std::to_string(threads), "--timeout", Exact(f.local.timeout_seconds),
      "--max_frame_bytes", std::to_string(f.local.max_frame_bytes),
      "--log_prefix", "false"};
  if (!f.local.data_dir.empty()) a.insert(a.end(), {"--data_dir", f.local.data_dir});
  if (!f.local.auth_token_file.empty()) {
    a.insert(a.end(), {"--auth_token_file", f.local.auth_token_file});
  }
  if (f.local.json) a.push_back("--json");
  if (f.local.quiet) a.push_back("--quiet");
  return a;
}

std::vector<std::string> ServeArgs(const LaunchFlags& f, int threads) {
  const auto& s = f.job.spec;
  std::vector<std::string> a = {SelfExe(), "serve"};
  auto common = CommonArgs(f, 0, threads);
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
                     "--eval_interval", std::to_string(s.eval_interval),
                     "--log_interval", std::to_string(s.log_interval),
                     "--checkpoint", f.checkpoint});
  if (s.nesterov) a.push_back("--nesterov");
  return a;
}

std::vector<std::string> WorkArgs(const LaunchFlags& f, int rank, int threads) {
  std::vector<std::string> a = {SelfExe(), "work"};
  auto common = CommonArgs(f, rank, threads);
  a.insert(a.end(), common.begin(), common.end());
  a.insert(a.end(), {"--device", f.device});
  return a;
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
  cluster::LaunchOptions o;
  o.prefix_stdout = !f.local.json;  // JSON lines carry their rank already
  o.children.push_back({ServeArgs(f, threads), "rank 0"});
  for (int r = w.num_servers; r < w.world_size; ++r) {
    o.children.push_back({WorkArgs(f, r, threads), "rank " + std::to_string(r)});
  }
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
  return [f] { return Launch(*f); };
}

}  // namespace pstrain::apps
