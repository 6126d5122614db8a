#include "cluster/launcher.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "cluster/line_relay.h"
#include "cluster/signal_pipe.h"
#include "cluster/spawn.h"
#include "util/check.h"

namespace pstrain::cluster {
namespace {

using internal::Describe;
using internal::Errno;
using internal::ExitCode;
using internal::Fd;
using internal::SignalPipe;
using internal::Spawn;
using internal::WaitBlocking;
using Clock = std::chrono::steady_clock;

constexpr int kPollMillis = 100;

// One of a child's output pipes, open until EOF.
struct Stream {
  Fd fd;
  LineRelay relay;
};

struct Child {
  const ChildSpec* spec;
  pid_t pid;  // -1 when not running (not yet started, or reaped)
  Stream out, err;
  int restarts = 0;
  bool restart_due = false;  // died; starts again with restart_argv
  // The spec's, until this child is named in another's place.
  bool survivable;
  bool ends_job;
  std::vector<size_t> successors;
};

// Relays what the pipe holds now; at EOF or on error ends the last line and
// closes the pipe.
void ReadStream(Stream* s) {
  char buf[16384];
  ssize_t n = read(s->fd.get(), buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (n > 0) {
    s->relay.Feed(buf, static_cast<size_t>(n));
    return;
  }
  s->relay.Finish();
  s->fd.Reset();
}

// The children of one RunChildren call and the state of their teardown.
class ChildGroup {
 public:
  /// `options` and `*signals` must outlive this group.
  ChildGroup(const LaunchOptions& options, SignalPipe* signals);
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;
  /// SIGKILLs and reaps the children still running.
  ~ChildGroup();

  /// Starts the children in order; stops at the first that fails.
  Status StartAll();
  /// Relays output and signals until every child has exited. Returns the
  /// first failing child's exit code, or 0.
  Result<int> Wait();
  /// SIGTERM to every running child now, SIGKILL after the grace period.
  void BeginTeardown();

 private:
  bool AnyRunning() const;
  void SignalAll(int sig);
  std::vector<Stream*> OpenStreams();
  int PollTimeoutMillis() const;
  Status PollOnce();
  void ReapExited();
  void OnExit(Child& c, int status);
  void StartAgain();
  bool NameSuccessor(Child& c, int status);
  void Say(const std::string& message);
  void Drain();

  const LaunchOptions& options_;
  SignalPipe* const signals_;
  std::vector<Child> children_;
  int first_failure_ = 0;
  bool job_over_ = false;  // a child with ends_job has exited
  std::optional<Clock::time_point> kill_at_;
  bool killed_ = false;
};

// A relay to options.on_line when set, else to `stream` with `prefix`.
LineRelay MakeRelay(const LaunchOptions& options, size_t child,
                    bool from_stderr, std::ostream* stream,
                    const std::string& prefix) {
  if (!options.on_line)
    return LineRelay(stream, prefix);
  auto on_line = options.on_line;
  return LineRelay([on_line, child, from_stderr](const std::string& line) {
    on_line(child, from_stderr, line);
  });
}

ChildGroup::ChildGroup(const LaunchOptions& options, SignalPipe* signals)
    : options_(options), signals_(signals) {
  for (size_t i = 0; i < options.children.size(); ++i) {
    const ChildSpec& spec = options.children[i];
    std::string prefix = "[" + spec.label + "] ";
    children_.push_back(
        Child{&spec, -1,
              Stream{Fd(), MakeRelay(options, i, false, options.out,
                                     options.prefix_stdout ? prefix : "")},
              Stream{Fd(), MakeRelay(options, i, true, options.err, prefix)}, 0,
              false, spec.survivable, spec.ends_job, spec.successors});
  }
}

ChildGroup::~ChildGroup() {
  for (Child& c : children_) {
    if (c.pid <= 0)
      continue;
    kill(-c.pid, SIGKILL);
    kill(c.pid, SIGKILL);
    WaitBlocking(c.pid);
  }
}

Status ChildGroup::StartAll() {
  for (Child& c : children_) {
    PS_ASSIGN_OR_RETURN(c.pid, Spawn(*signals_, c.spec->argv, c.spec->label,
                                     &c.out.fd, &c.err.fd));
  }
  return Status::Ok();
}

Result<int> ChildGroup::Wait() {
  while (AnyRunning()) {
    PS_RETURN_IF_ERROR(PollOnce());
    ReapExited();
    StartAgain();
    if (kill_at_ && !killed_ && Clock::now() >= *kill_at_) {
      SignalAll(SIGKILL);
      killed_ = true;
    }
  }
  Drain();
  return first_failure_;
}

void ChildGroup::BeginTeardown() {
  if (kill_at_)
    return;
  SignalAll(SIGTERM);
  kill_at_ = Clock::now() +
             std::chrono::duration_cast<Clock::duration>(
                 std::chrono::duration<double>(options_.kill_grace_seconds));
}

bool ChildGroup::AnyRunning() const {
  return std::any_of(children_.begin(), children_.end(),
                     [](const Child& c) { return c.pid > 0; });
}

// To the child's process group (its own, from setpgid), else to the child.
void ChildGroup::SignalAll(int sig) {
  for (const Child& c : children_) {
    if (c.pid > 0 && kill(-c.pid, sig) != 0)
      kill(c.pid, sig);
  }
}

std::vector<Stream*> ChildGroup::OpenStreams() {
  std::vector<Stream*> open;
  for (Child& c : children_) {
    if (c.out.fd.get() >= 0)
      open.push_back(&c.out);
    if (c.err.fd.get() >= 0)
      open.push_back(&c.err);
  }
  return open;
}

int ChildGroup::PollTimeoutMillis() const {
  if (!kill_at_ || killed_)
    return kPollMillis;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      *kill_at_ - Clock::now());
  return static_cast<int>(
      std::clamp<int64_t>(left.count() + 1, 0, kPollMillis));
}

Status ChildGroup::PollOnce() {
  std::vector<Stream*> streams = OpenStreams();
  std::vector<pollfd> fds{{signals_->fd(), POLLIN, 0}};
  for (Stream* s : streams)
    fds.push_back({s->fd.get(), POLLIN, 0});
  if (poll(fds.data(), fds.size(), PollTimeoutMillis()) < 0) {
    return errno == EINTR ? Status::Ok() : internal::Errno("poll");
  }
  if (fds[0].revents != 0) {
    for (int sig : signals_->Take()) {
      if (sig != SIGCHLD)
        SignalAll(sig);  // SIGCHLD only wakes us up
    }
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    if (fds[i + 1].revents != 0)
      ReadStream(streams[i]);
  }
  return Status::Ok();
}

// Every child that exited is reaped before any is acted on, so that a
// successor that died too is not named.
void ChildGroup::ReapExited() {
  std::vector<std::pair<Child*, int>> exited;
  for (Child& c : children_) {
    int status = 0;
    pid_t reaped = c.pid > 0 ? waitpid(c.pid, &status, WNOHANG) : 0;
    if (reaped == 0 || (reaped < 0 && errno == EINTR))
      continue;
    c.pid = -1;
    if (reaped < 0)
      status = 1 << 8;  // ECHILD: reaped elsewhere, status lost
    exited.emplace_back(&c, status);
  }
  for (auto& [child, status] : exited)
    OnExit(*child, status);
}

void ChildGroup::OnExit(Child& c, int status) {
  if (ExitCode(status) != 0 && first_failure_ == 0 && !kill_at_ &&
      NameSuccessor(c, status)) {
    return;
  }
  job_over_ = job_over_ || c.ends_job;
  if (ExitCode(status) == 0 || first_failure_ != 0)
    return;
  const bool survivable = c.survivable;
  if (!survivable)
    first_failure_ = ExitCode(status);
  const bool restartable = survivable && !c.spec->restart_argv.empty() &&
                           c.restarts < c.spec->max_restarts && !kill_at_;
  c.restart_due = restartable && !job_over_;
  std::string next =
      survivable ? "; the others go on" : "; stopping the others";
  if (restartable)
    next = job_over_ ? "; the job is over: not starting it again"
                     : "; the others go on; starting it again";
  Say("pstrain launch: " + c.spec->label + " " + Describe(status) + next);
  if (!survivable)
    BeginTeardown();
}

// `c` died: the first of its successors still running takes its place,
// named by SIGUSR1 (false when none runs). `c` is then a survivable child
// like the others, started again (as a standby) when it can be, and the
// next in line after the named one: the successors form a ring.
bool ChildGroup::NameSuccessor(Child& c, int status) {
  for (size_t i = 0; i < c.successors.size(); ++i) {
    Child& next = children_[c.successors[i]];
    if (next.pid <= 0 || kill(next.pid, SIGUSR1) != 0)
      continue;
    next.survivable = false;  // never started again: it holds the job now
    next.ends_job = true;
    next.successors.assign(c.successors.begin() + i + 1, c.successors.end());
    next.successors.push_back(static_cast<size_t>(&c - children_.data()));
    next.successors.insert(next.successors.end(), c.successors.begin(),
                           c.successors.begin() + i);
    c.successors.clear();
    c.survivable = true;
    c.ends_job = false;
    c.restart_due = !c.spec->restart_argv.empty() &&
                    c.restarts < c.spec->max_restarts && !job_over_;
    Say("pstrain launch: " + c.spec->label + " " + Describe(status) + "; " +
        next.spec->label + " is the master now" +
        (c.restart_due ? "; starting " + c.spec->label + " again" : ""));
    return true;
  }
  return false;
}

// The children that died with restart_argv start again, on new pipes,
// once their old ones have given what they held.
void ChildGroup::StartAgain() {
  for (Child& c : children_) {
    if (!c.restart_due || kill_at_ || job_over_)
      continue;
    c.restart_due = false;
    for (Stream* s : {&c.out, &c.err}) {
      while (s->fd.get() >= 0) {
        pollfd fd{s->fd.get(), POLLIN, 0};
        if (poll(&fd, 1, 0) <= 0)
          break;
        ReadStream(s);
      }
      s->relay.Finish();
      s->fd.Reset();
    }
    auto pid = Spawn(*signals_, c.spec->restart_argv, c.spec->label, &c.out.fd,
                     &c.err.fd);
    if (!pid.ok()) {
      Say("pstrain launch: " + pid.status().message());
      continue;
    }
    c.pid = *pid;
    ++c.restarts;
  }
}

void ChildGroup::Say(const std::string& message) {
  if (options_.on_line) {
    options_.on_line(children_.size(), true, message);
  } else {
    *options_.err << message << "\n";
    options_.err->flush();
  }
}

// Relays what the exited children left in their pipes, then ends every
// stream. Reads only what is there now: a grandchild may hold a pipe open.
void ChildGroup::Drain() {
  for (int round = 0; round < 1024; ++round) {
    std::vector<Stream*> streams = OpenStreams();
    std::vector<pollfd> fds;
    for (Stream* s : streams)
      fds.push_back({s->fd.get(), POLLIN, 0});
    int ready;
    while ((ready = poll(fds.data(), fds.size(), 0)) < 0 && errno == EINTR) {
    }
    if (ready <= 0)
      break;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (fds[i].revents != 0)
        ReadStream(streams[i]);
    }
  }
  for (Stream* s : OpenStreams()) {
    s->relay.Finish();
    s->fd.Reset();
  }
}

}  // namespace

Result<int> RunChildren(const LaunchOptions& options) {
  PS_CHECK(options.out != nullptr && options.err != nullptr);
  SignalPipe signals;
  PS_RETURN_IF_ERROR(signals.Install());
  ChildGroup group(options, &signals);
  Status started = group.StartAll();
  if (started.ok())
    return group.Wait();
  group.BeginTeardown();
  static_cast<void>(group.Wait());
  return started;
}

int ThreadsPerProcess(int n) {
  PS_CHECK(n >= 1) << "n = " << n;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / n);
}

}  // namespace pstrain::cluster
