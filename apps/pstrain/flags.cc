#include "apps/pstrain/flags.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "models/compute_threads.h"
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

void AddRdzvFlags(CLI::App* app, RdzvFlags* f,
                  const std::vector<std::string>& backends,
                  const std::string& backend_help) {
  app->add_option("--rdzv_backend", f->backend, backend_help)
      ->capture_default_str()
      ->check(CLI::IsMember(backends));
  app->add_option("--rdzv_endpoint", f->endpoint,
                  "--rdzv_backend etcd: host:port of an etcd member's client "
                  "URL (plain HTTP), where the master holds its lease and says "
                  "where it listens");
  app->add_option("--rdzv_id", f->id,
                  "--rdzv_backend etcd: the job's name in etcd, the same on "
                  "every rank, so that jobs can share one etcd")
      ->capture_default_str();
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

Status CheckFlagNeeds(const std::vector<FlagNeed>& needs) {
  for (const FlagNeed& n : needs) {
    if (n.flag->count() > 0 && !n.met())
      return InvalidArgument(n.flag->get_name() + ": only with " + n.needs);
  }
  return Status::Ok();
}

void RefuseNegativeUnsigned(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    if (opt->get_type_name().rfind("UINT", 0) != 0)
      continue;
    // transform: ahead of the flag's other checks, whose messages would
    // speak of the wrapped number.
    opt->transform(CLI::Validator(
        [](std::string& text) {
          const size_t at = text.find_first_not_of(" \t");
          if (at == std::string::npos || text[at] != '-')
            return std::string();
          return text + " is negative, expected an unsigned integer";
        },
        ""));
  }
  for (CLI::App* sub : app->get_subcommands({}))
    RefuseNegativeUnsigned(sub);
}

void AddLocalFlags(CLI::App* app, LocalFlags* f) {
  const char* g = "This process";
  app->add_option("--data_dir", f->data_dir,
                  "Directory of the data set's IDX files (plain or .gz); "
                  "default: Debian's, /usr/share/datasets/<dataset>")
      ->group(g);
  app->add_option(
         "--threads", f->threads,
         "Compute threads (0: libtorch's default; launch splits the cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber)
      ->group(g);
  app->add_option("--timeout", f->timeout_seconds,
                  "Seconds to wait for a peer before giving up")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(g);
  app->add_option("--max_frame_bytes", f->max_frame_bytes,
                  "Largest frame body accepted from a peer, in bytes; a larger "
                  "one is refused from its header, before any allocation")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(g);
  app->add_option("--auth_token_file", f->auth_token_file,
                  "File holding a token that every process of the job shares; "
                  "connections must prove they know it (HMAC-SHA256 "
                  "challenge-response; the token never travels)")
      ->group(g);
  app->add_option(
         "--metrics_port", f->metrics_port,
         "Serve this process's Prometheus metrics at /metrics on "
         "this port (0: a free one, announced in the listen event), "
         "and on rank 0 the live dashboard at /; launch: rank r on this "
         "port + r; default: off")
      ->check(CLI::Range(0, 65535))
      ->group(g);
  CLI::Option* addr =
      app->add_option("--metrics_addr", f->metrics_addr,
                      "Address the metrics port binds (0.0.0.0: every "
                      "interface, for a Prometheus on another machine)")
          ->capture_default_str()
          ->group(g);
  CLI::Option* linger =
      app->add_option("--metrics_linger", f->metrics_linger,
                      "Seconds to keep serving metrics after the run, so that "
                      "the last scrape sees the final values; Ctrl-C "
                      "(SIGINT) or SIGTERM ends it early, with exit status 0")
          ->capture_default_str()
          ->check(CLI::NonNegativeNumber)
          ->group(g);
  for (const CLI::Option* o : {addr, linger})
    f->needs.push_back(
        {o, "--metrics_port", [f] { return f->metrics_port >= 0; }});
  app->add_option("--timeline", f->timeline,
                  "Write a Chrome trace of every step (forward, backward, "
                  "each key's push and pull, the server's updates; opens in "
                  "Perfetto or about:tracing) to this file at the end; "
                  "launch: a directory, one rank-R.json per rank merged into "
                  "timeline.json")
      ->group(g);
  app->add_flag("--json", f->json, "JSON Lines events on stdout")->group(g);
  app->add_flag("--quiet", f->quiet, "No progress lines on stderr")->group(g);
  // launch prefixes its children's lines itself; hidden from --help.
  app->add_option("--log_prefix", f->log_prefix)->group("");
}

Result<std::string> AuthToken(const LocalFlags& f) {
  if (f.auth_token_file.empty())
    return std::string();
  return net::ReadAuthToken(f.auth_token_file);
}

void SetThreads(int threads) {
  models::SetComputeThreads(threads);
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kIncompatible:
      return 2;
    default:
      return 1;
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
  return std::make_unique<report::EventLog>(EventLogOptionsFor(f, rank, role));
}

report::EventLogOptions EventLogOptionsFor(const LocalFlags& f, int rank,
                                           const std::string& role) {
  report::EventLogOptions o;
  o.json = f.json;
  o.quiet = f.quiet;
  o.rank = rank;
  o.role = role;
  o.prefix = f.log_prefix;
  // launch draws its own board; its children (no prefix) feed it.
  const bool own_board = (role == "server" || role == "worker") &&
                         f.log_prefix && WantsLiveBoard(f);
  o.live_width = own_board ? TerminalWidth() : 0;
  return o;
}

std::unique_ptr<trace::Timeline> MakeTimeline(const LocalFlags& f, int rank,
                                              const std::string& role) {
  if (f.timeline.empty())
    return nullptr;
  return std::make_unique<trace::Timeline>(
      rank, "rank " + std::to_string(rank) + " (" + role + ")");
}

void WriteTimeline(const LocalFlags& f, const trace::Timeline* timeline,
                   report::EventLog& log) {
  if (timeline == nullptr)
    return;
  Status s = timeline->WriteFile(f.timeline);
  if (!s.ok())
    log.Info(s.message());
}

int Fail(report::EventLog& log, const Status& status) {
  int code = ExitCodeFor(status);
  log.Error(status.message(), code);
  return code;
}

}  // namespace pstrain::apps
