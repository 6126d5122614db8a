#include "testing/process.h"

#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "net/listener.h"
#include "util/check.h"

extern char** environ;

namespace pstrain::testing {

namespace {

double Now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string TempPath(const char* what) {
  static int counter = 0;
  return "/tmp/pstrain_test_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++) + "." + what;
}

}  // namespace

std::string PstrainBin() {
  const char* bin = std::getenv("PSTRAIN_BIN");
  return bin ? bin : "pstrain";
}

std::string PstrainTestingBin() {
  const std::string bin = PstrainBin();
  const size_t slash = bin.rfind('/');
  return (slash == std::string::npos ? "" : bin.substr(0, slash + 1)) +
         "pstrain_testing";
}

Process::Process(std::vector<std::string> args)
    : out_path_(TempPath("out")), err_path_(TempPath("err")), start_(Now()) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  PS_CHECK(rc == 0) << "cannot start " << args[0] << ": " << rc;
}

Process::~Process() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ::unlink(out_path_.c_str());
  ::unlink(err_path_.c_str());
}

bool Process::WaitForErr(const std::string& text, double timeout_seconds) const {
  const double deadline = Now() + timeout_seconds;
  while (Slurp(err_path_).find(text) == std::string::npos) {
    if (Now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void Process::Signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

ProcessResult Process::Wait(double timeout_seconds) {
  ProcessResult r;
  int status = 0;
  const double deadline = Now() + timeout_seconds;
  while (!reaped_) {
    pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      reaped_ = true;
      break;
    }
    if (Now() > deadline) {
      r.timed_out = true;
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      reaped_ = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.seconds = Now() - start_;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(out_path_);
  r.err = Slurp(err_path_);
  return r;
}

ProcessResult RunPstrain(const std::vector<std::string>& args,
                         double timeout_seconds) {
  std::vector<std::string> argv = {PstrainBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv);
  return p.Wait(timeout_seconds);
}

int FreePort() {
  auto port = net::PickFreePort("127.0.0.1");
  PS_CHECK(port.ok()) << port.status().ToString();
  return *port;
}

}  // namespace pstrain::testing
