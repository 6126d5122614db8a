#pragma once
// Flag groups shared by subcommands, and the glue every subcommand needs:
// launcher environments, thread counts, exit codes, the event log.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cluster/world.h"
#include "report/event_log.h"
#include "trace/timeline.h"
#include "util/result.h"
#include "util/status.h"

namespace pstrain::apps {

/// --rank, --world_size, --master_addr, --master_port (PyTorch's RPC
/// tutorial's names and defaults) and --num_servers.
struct WorldFlags {
  cluster::World world;
  CLI::Option* rank = nullptr;
  CLI::Option* world_size = nullptr;
  CLI::Option* master_addr = nullptr;
  CLI::Option* master_port = nullptr;
};
void AddWorldFlags(CLI::App* app, WorldFlags* flags, bool with_rank);
/// Fills what flags left unset from torchrun's RANK, WORLD_SIZE, MASTER_ADDR
/// and MASTER_PORT, then validates for `role` ("server", "worker", "launch").
Status ResolveWorld(WorldFlags* flags, const std::string& role);

/// --rdzv_backend, --rdzv_endpoint, --rdzv_id (torchrun's names): who
/// names the master when rank 0 dies, and, for etcd, where it is and the
/// job's name there. `backends`: those this subcommand takes.
struct RdzvFlags {
  std::string backend = "static";
  std::string endpoint;
  std::string id = "none";
};
void AddRdzvFlags(CLI::App* app, RdzvFlags* flags,
                  const std::vector<std::string>& backends,
                  const std::string& backend_help);

/// A flag that only means something beside another: given (on the command
/// line or by --config) while `met` is false, it is refused.
struct FlagNeed {
  const CLI::Option* flag;
  std::string needs;          // what it needs: "--replicas 2 or more"
  std::function<bool()> met;  // asked once the command line is parsed
};
/// kInvalidArgument "--restart_servers: only with --replicas 2 or more" for
/// the first of `needs` whose flag was given while its need is not met; ok
/// otherwise.
Status CheckFlagNeeds(const std::vector<FlagNeed>& needs);

/// Makes every flag of `app` and of its subcommands whose value is an
/// unsigned integer (CLI11's type UINT) refuse a negative value, which
/// CLI11 would take modulo 2^64, before its other checks: "--send_window:
/// -1 is negative, expected an unsigned integer". Call once the flags are
/// added.
void RefuseNegativeUnsigned(CLI::App* app);

/// Flags about this process only.
struct LocalFlags {
  std::string data_dir;  // "" = Debian's place for the data set
  int threads = 0;       // 0 = libtorch's default
  double timeout_seconds = 120;
  uint64_t max_frame_bytes = uint64_t{1} << 32;  // larger frames are refused
  std::string auth_token_file;                   // "" = no authentication
  bool json = false;
  bool quiet = false;
  bool log_prefix = true;  // "pstrain rank 1 (worker): " before human lines
  int metrics_port = -1;   // -1: no metrics; 0: the kernel picks
  std::string metrics_addr = "0.0.0.0";
  double metrics_linger = 0;  // seconds
  std::string timeline;       // --timeline: "" = none; launch: a directory
  /// Those of these flags that need another (--metrics_addr and
  /// --metrics_linger: --metrics_port); a subcommand adds its own.
  std::vector<FlagNeed> needs;
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(
        static_cast<int64_t>(timeout_seconds * 1000));
  }
};
void AddLocalFlags(CLI::App* app, LocalFlags* flags);

/// The --auth_token_file token; "" without the flag. Errors as
/// net::ReadAuthToken (bad input, naming the file).
Result<std::string> AuthToken(const LocalFlags& flags);

/// Sets libtorch's intra-op threads and OpenBLAS's (the linear layers' BLAS)
/// to `threads` (0: leave the defaults).
void SetThreads(int threads);

/// 2 for bad usage or input (kInvalidArgument, kNotFound, kIncompatible),
/// 1 for a run that failed.
int ExitCodeFor(const Status& status);

/// Whether human output goes to a terminal that can move the cursor (and
/// not --quiet): then it is drawn live, a progress bar redrawn in place.
bool WantsLiveBoard(const LocalFlags& local);
/// Columns of the terminal on stderr; 80 when unknown.
int TerminalWidth();

/// The EventLog's options for this process (MakeEventLog's).
report::EventLogOptions EventLogOptionsFor(const LocalFlags& flags, int rank,
                                           const std::string& role);

/// A serve or work process on a live terminal (WantsLiveBoard, and not a
/// child of launch) draws its own one-row board.
std::unique_ptr<report::EventLog> MakeEventLog(const LocalFlags& flags,
                                               int rank,
                                               const std::string& role);

/// --timeline: this process's recorder (pid `rank`, named "rank R
/// (role)"); nullptr without the flag.
std::unique_ptr<trace::Timeline> MakeTimeline(const LocalFlags& flags, int rank,
                                              const std::string& role);
/// Writes `timeline` (none: nothing) to the --timeline file; a failure is
/// logged, not returned: the run's own outcome stands.
void WriteTimeline(const LocalFlags& flags, const trace::Timeline* timeline,
                   report::EventLog& log);

/// Reports `status` through `log` and returns its exit code.
int Fail(report::EventLog& log, const Status& status);

}  // namespace pstrain::apps
