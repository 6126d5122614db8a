#include "apps/pstrain/flags.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "models/compute_threads.h"
#include "ps/interval.h"
#include "net/auth.h"

extern char** environ;

namespace pstrain::apps {

void AddWorldFlags(CLI::App* app, WorldFlags* f, bool with_rank) {
  if (with_rank) {
    f->rank = app->add_option("--rank", f->world.rank,
                              "Rank of this process (0 = server and master); "
                              "default: $RANK");
  }
  f->world_size = app->add_option(
      "--world_size", f->world.world_size,
      "Number of processes: servers plus workers; default: $WORLD_SIZE");
  f->master_addr = app->add_option("--master_addr", f->world.master_addr,
                                   "Address of rank 0; default: $MASTER_ADDR "
                                   "or localhost");
  f->master_port = app->add_option("--master_port", f->world.master_port,
                                   "Port of rank 0; default: $MASTER_PORT "
                                   "or 29500");
  app->add_option("--num_servers", f->world.num_servers,
                  "Ranks 0..S-1 serve parameters, each a share of the bytes")
      ->default_val(1)
      ->check(CLI::Range(1, 4096));
}

Status ResolveWorld(WorldFlags* f, const std::string& role) {
  cluster::GivenFlags given;
  given.rank = f->rank && f->rank->count() > 0;
  given.world_size = f->world_size->count() > 0;
  given.master_addr = f->master_addr->count() > 0;
  given.master_port = f->master_port->count() > 0;
  PS_RETURN_IF_ERROR(cluster::ApplyLauncherEnv(cluster::EnvironmentMap(environ),
                                               given, &f->world));
  if (f->world.world_size < 0) {
    return InvalidArgument("--world_size is required (or set WORLD_SIZE)");
  }
  if (f->rank && f->world.rank < 0) {
    if (role == "server") {
      f->world.rank = 0;
    } else {
      return InvalidArgument("--rank is required (or set RANK)");
    }
  }
  return cluster::ValidateWorld(f->world, role);
}

void AddJobFlags(CLI::App* app, JobFlags* f) {
  auto& s = f->spec;
  const char* g = "Job (rank 0's flags decide for every process)";
  app->add_option("--model", s.model, "net, convnet or mlp")->capture_default_str()->group(g);
  app->add_option("--dataset", s.dataset, "fashion-mnist or mnist")->capture_default_str()->group(g);
  app->add_option("--mode", f->mode, "sync, async or ssp")->capture_default_str()->group(g);
  app->add_option("--staleness", s.staleness, "ssp: versions a worker may run ahead of the slowest")->capture_default_str()->group(g);
  app->add_option("--optimizer", s.optimizer, "The server's optimizer: sgd, adam, adamw, adagrad or rmsprop")->capture_default_str()->group(g);
  app->add_option("--lr", s.lr, "Learning rate of the server's optimizer")->capture_default_str()->group(g);
  app->add_option("--momentum", s.momentum, "Momentum of sgd and rmsprop")->capture_default_str()->group(g);
  app->add_flag("--nesterov", s.nesterov, "sgd: Nesterov momentum")->group(g);
  app->add_option("--weight_decay", s.weight_decay, "Weight decay (L2; adamw: decoupled)")->capture_default_str()->group(g);
  app->add_option("--betas", f->betas, "adam, adamw: B1,B2")->capture_default_str()->group(g);
  app->add_option("--eps", s.eps, "adam, adamw, rmsprop, adagrad: epsilon (0: libtorch's default, 1e-8; adagrad 1e-10)")->capture_default_str()->group(g);
  app->add_option("--lr_schedule", s.lr_schedule, "lr by server version: constant, step:N:GAMMA or cosine")->capture_default_str()->group(g);
  app->add_option("--staleness_lr", s.staleness_lr, "async, ssp: lr of a stale push: none, inverse (1/staleness) or linear:ALPHA")->capture_default_str()->group(g);
  app->add_option("--batch_size", s.batch_size, "Samples per worker per step")->capture_default_str()->group(g);
  app->add_option("--epochs", s.epochs, "Passes over the training set")->capture_default_str()->group(g);
  app->add_option("--max_steps", s.max_steps, "Stop each worker after this many steps (0: no limit)")->capture_default_str()->group(g);
  app->add_option("--seed", s.seed, "Seed of the model, shuffling and dropout")->capture_default_str()->group(g);
  app->add_option("--eval_interval", f->eval_interval, "Evaluate every N versions, or every Ns seconds (e.g. 300 or 30s), on a snapshot and threads of its own while training goes on; 0: at the end only")->capture_default_str()->group(g);
  app->add_option("--target_accuracy", s.target_accuracy, "Stop the run at the first evaluation whose test accuracy reaches this (0..1; 0: never); that version is the checkpoint")->capture_default_str()->check(CLI::Range(0.0, 1.0))->group(g);
  app->add_option("--log_interval", s.log_interval, "Steps between progress events")->capture_default_str()->group(g);
  app->add_option("--slice_bytes", s.slice_bytes, "With --num_servers > 1: a parameter larger than this is split by rows across servers (bytes)")->capture_default_str()->group(g);
  app->add_option("--backup_workers", s.backup_workers, "sync: a step closes once all but this many workers have pushed; late pushes are dropped")->capture_default_str()->group(g);
  app->add_option("--server_threads", s.server_threads, "Threads of each server that step disjoint groups of keys in parallel (one key is only ever stepped by one)")->capture_default_str()->group(g);
  app->add_option("--heartbeat", s.heartbeat, "Seconds between heartbeats of a worker busy computing")->capture_default_str()->group(g);
  app->add_option("--dead_after", s.dead_after, "sync: seconds without a word from a worker the step waits on before it is lost and the step goes on without it (0: never)")->capture_default_str()->group(g);
  app->add_flag("--reassign_shards", s.reassign_shards, "sync: once a worker is lost, the others share its samples (each step still covers the whole global batch)")->group(g);
  app->add_option("--step_timeout", s.step_timeout, "sync: seconds after a step's first push before it closes without the workers not yet in (0: never)")->capture_default_str()->group(g);
}

Status FinishJobSpec(JobFlags* f, int world_size, int num_servers) {
  PS_ASSIGN_OR_RETURN(f->spec.mode, ps::ParseMode(f->mode));
  const size_t comma = f->betas.find(',');
  bool betas_ok = comma != std::string::npos;
  for (int i = 0; betas_ok && i < 2; ++i) {
    const std::string part = i == 0 ? f->betas.substr(0, comma) : f->betas.substr(comma + 1);
    char* end = nullptr;
    f->spec.betas[i] = std::strtod(part.c_str(), &end);
    betas_ok = !part.empty() && end == part.c_str() + part.size();
  }
  if (!betas_ok) {
    return InvalidArgument("--betas '" + f->betas + "': expected two numbers B1,B2");
  }
  PS_ASSIGN_OR_RETURN(ps::Interval eval,
                      ps::ParseInterval("--eval_interval", f->eval_interval, /*allow_zero=*/true));
  f->spec.eval_interval = static_cast<int64_t>(eval.steps);
  f->spec.eval_seconds = static_cast<double>(eval.time.count()) / 1000;
  f->spec.world_size = world_size;
  f->spec.num_servers = num_servers;
  return ps::ValidateJobSpec(f->spec);
}

void AddLocalFlags(CLI::App* app, LocalFlags* f) {
  const char* g = "This process";
  app->add_option("--data_dir", f->data_dir,
                  "Directory of the data set's IDX files (plain or .gz); "
                  "default: Debian's, /usr/share/datasets/<dataset>")->group(g);
  app->add_option("--threads", f->threads, "Compute threads (0: libtorch's default; launch splits the cores)")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->group(g);
  app->add_option("--timeout", f->timeout_seconds,
                  "Seconds to wait for a peer before giving up")
      ->capture_default_str()->check(CLI::PositiveNumber)->group(g);
  app->add_option("--max_frame_bytes", f->max_frame_bytes,
                  "Largest frame body accepted from a peer, in bytes; a larger "
                  "one is refused from its header, before any allocation")
      ->capture_default_str()->check(CLI::PositiveNumber)->group(g);
  app->add_option("--auth_token_file", f->auth_token_file,
                  "File holding a token that every process of the job shares; "
                  "connections must prove they know it (HMAC-SHA256 "
                  "challenge-response; the token never travels)")->group(g);
  app->add_flag("--json", f->json, "JSON Lines events on stdout")->group(g);
  app->add_flag("--quiet", f->quiet, "No progress lines on stderr")->group(g);
  // launch prefixes its children's lines itself; hidden from --help.
  app->add_option("--log_prefix", f->log_prefix)->group("");
}

Result<std::string> AuthToken(const LocalFlags& f) {
  if (f.auth_token_file.empty()) return std::string();
  return net::ReadAuthToken(f.auth_token_file);
}

void SetThreads(int threads) { models::SetComputeThreads(threads); }

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return 0;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kIncompatible: return 2;
    default: return 1;
  }
}

bool WantsLiveBoard(const LocalFlags& local) {
  const char* term = std::getenv("TERM");
  return !local.quiet && isatty(STDERR_FILENO) && term != nullptr &&
         std::strcmp(term, "dumb") != 0;
}

int TerminalWidth() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return size.ws_col;
  }
  return 80;
}

std::unique_ptr<report::EventLog> MakeEventLog(const LocalFlags& f, int rank,
                                               const std::string& role) {
  report::EventLogOptions o;
  o.json = f.json;
  o.quiet = f.quiet;
  o.rank = rank;
  o.role = role;
  o.prefix = f.log_prefix;
  // launch draws its own board; its children (no prefix) feed it.
  const bool own_board =
      (role == "server" || role == "worker") && f.log_prefix && WantsLiveBoard(f);
  o.live_width = own_board ? TerminalWidth() : 0;
  return std::make_unique<report::EventLog>(o);
}

int Fail(report::EventLog& log, const Status& status) {
  int code = ExitCodeFor(status);
  log.Error(status.message(), code);
  return code;
}

}  // namespace pstrain::apps
