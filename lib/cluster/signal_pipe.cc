#include "cluster/signal_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <system_error>

#include "util/check.h"

namespace pstrain::cluster::internal {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGCHLD};
std::atomic<int> g_signal_write_fd{-1};

void OnSignal(int sig) {
  int saved = errno;
  int fd = g_signal_write_fd.load();
  if (fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(sig);
    ssize_t ignored = write(fd, &byte, 1);  // a full pipe drops the byte
    (void)ignored;
  }
  errno = saved;
}

// Moves *fd above 0..2.
Status AboveStdio(Fd* fd) {
  if (fd->get() > 2)
    return Status::Ok();
  int moved = fcntl(fd->get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0)
    return Errno("fcntl");
  fd->Reset(moved);
  return Status::Ok();
}

}  // namespace

void Fd::Reset(int fd) {
  if (fd_ >= 0)
    close(fd_);  // not retried on EINTR: Linux closes anyway
  fd_ = fd;
}

Status Errno(const std::string& what, int error) {
  return IOError(what + ": " + std::system_category().message(error));
}

Status MakePipe(Fd* read_end, Fd* write_end, bool nonblocking) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return Errno("pipe");
  *read_end = Fd(fds[0]);
  *write_end = Fd(fds[1]);
  PS_RETURN_IF_ERROR(AboveStdio(read_end));
  PS_RETURN_IF_ERROR(AboveStdio(write_end));
  if (nonblocking && fcntl(read_end->get(), F_SETFL, O_NONBLOCK) != 0) {
    return Errno("fcntl");
  }
  return Status::Ok();
}

SignalPipe::~SignalPipe() {
  for (size_t i = 0; i < installed_; ++i) {
    sigaction(kSignals[i], &old_[i], nullptr);
  }
  int mine = write_.get();
  g_signal_write_fd.compare_exchange_strong(mine, -1);
}

Status SignalPipe::Install() {
  static_assert(std::size(kSignals) == kNumSignals);
  PS_RETURN_IF_ERROR(MakePipe(&read_, &write_, /*nonblocking=*/true));
  if (fcntl(write_.get(), F_SETFL, O_NONBLOCK) != 0)
    return Errno("fcntl");
  int none = -1;
  PS_CHECK(g_signal_write_fd.compare_exchange_strong(none, write_.get()))
      << "another SignalPipe is installed (RunChildren is not reentrant)";
  struct sigaction action {};
  action.sa_handler = OnSignal;
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&action.sa_mask);
  for (; installed_ < kNumSignals; ++installed_) {
    if (sigaction(kSignals[installed_], &action, &old_[installed_]) != 0) {
      return Errno("sigaction");
    }
  }
  return Status::Ok();
}

std::vector<int> SignalPipe::Take() {
  std::vector<int> signals;
  unsigned char buf[64];
  while (true) {
    ssize_t n = read(read_.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    signals.insert(signals.end(), buf, buf + n);
  }
  return signals;
}

void SignalPipe::ResetInChild() const {
  struct sigaction action {};
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < installed_; ++i) {
    bool keep = kSignals[i] != SIGCHLD && old_[i].sa_handler == SIG_IGN;
    action.sa_handler = keep ? SIG_IGN : SIG_DFL;
    sigaction(kSignals[i], &action, nullptr);
  }
}

}  // namespace pstrain::cluster::internal
