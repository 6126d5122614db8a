#include "cluster/spawn.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "util/check.h"

namespace pstrain::cluster::internal {

int ExitCode(int wait_status) {
  if (WIFEXITED(wait_status))
    return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status))
    return 128 + WTERMSIG(wait_status);
  return 1;
}

// Waits for `pid` regardless of signals. Returns its exit code.
int WaitBlocking(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ExitCode(status);
}

std::string Describe(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(wait_status));
  }
  return "exited with status " + std::to_string(ExitCode(wait_status));
}

namespace {

struct ExecArgs {
  char* const* argv;
  int out_fd, err_fd, status_fd;
  pid_t parent;
  const SignalPipe* signals;
  const sigset_t* mask;
};

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void ExecChild(const ExecArgs& a) {
  setpgid(0, 0);
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != a.parent)
    _exit(127);
#endif
  a.signals->ResetInChild();
  sigprocmask(SIG_SETMASK, a.mask, nullptr);
  if (dup2(a.out_fd, STDOUT_FILENO) >= 0 &&
      dup2(a.err_fd, STDERR_FILENO) >= 0) {
    execv(a.argv[0], a.argv);
  }
  int error = errno;
  ssize_t ignored = write(a.status_fd, &error, sizeof(error));
  (void)ignored;
  _exit(127);
}

// Reads the errno a child sends when exec fails; 0 once exec closed the pipe.
int ReadExecError(const Fd& status_read) {
  int error = 0;
  ssize_t n;
  while ((n = read(status_read.get(), &error, sizeof(error))) < 0 &&
         errno == EINTR) {
  }
  return n == static_cast<ssize_t>(sizeof(error)) ? error : 0;
}

// Forks a child that execs `args`, with SIGINT, SIGTERM and SIGCHLD blocked
// across fork so that none of our handlers runs in the child. Returns the
// pid, or -1 with errno set.
pid_t ForkExec(ExecArgs args) {
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD})
    sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  args.mask = &old_mask;
  pid_t pid = fork();
  if (pid == 0)
    ExecChild(args);
  int fork_error = errno;
  if (pid > 0)
    setpgid(pid, pid);  // the child does it too; either may be first
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = fork_error;
  return pid;
}

}  // namespace

Result<pid_t> Spawn(const SignalPipe& signals,
                    const std::vector<std::string>& args,
                    const std::string& label, Fd* out, Fd* err) {
  PS_CHECK(!args.empty()) << "child " << label << " has no argv";
  std::vector<char*> argv;
  for (const std::string& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  Fd out_write, err_write, status_read, status_write;
  PS_RETURN_IF_ERROR(internal::MakePipe(out, &out_write, true));
  PS_RETURN_IF_ERROR(internal::MakePipe(err, &err_write, true));
  PS_RETURN_IF_ERROR(internal::MakePipe(&status_read, &status_write, false));
  pid_t pid = ForkExec({argv.data(), out_write.get(), err_write.get(),
                        status_write.get(), getpid(), &signals, nullptr});
  if (pid < 0)
    return internal::Errno("fork");
  status_write.Reset();
  int exec_error = ReadExecError(status_read);
  if (exec_error == 0)
    return pid;
  WaitBlocking(pid);
  return internal::Errno("cannot start " + label + " (" + args[0] + ")",
                         exec_error);
}

}  // namespace pstrain::cluster::internal
