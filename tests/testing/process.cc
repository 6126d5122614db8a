#include "testing/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

// The lines of `text` that a newline ends (a last line still being written
// is left out), without their newlines.
std::vector<std::string_view> WholeLines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t at = 0, end;
       (end = text.find('\n', at)) != std::string_view::npos; at = end + 1) {
    lines.push_back(text.substr(at, end - at));
  }
  return lines;
}

// "0".."65535" as a port; -1 otherwise.
int ParsePort(std::string_view digits) {
  if (digits.empty() || digits.size() > 5)
    return -1;
  int port = 0;
  for (char c : digits) {
    if (c < '0' || c > '9')
      return -1;
    port = port * 10 + (c - '0');
  }
  return port <= 65535 ? port : -1;
}

// The port of the first "listen" event of JSON Lines `out` (--json:
// {"event":"listen",...,"port":N,...}); -1 if none.
int JsonListenPort(std::string_view out) {
  for (std::string_view line : WholeLines(out)) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_object())
      continue;
    const auto event = e.find("event");
    if (event == e.end() || !event->is_string() || *event != "listen")
      continue;
    const auto port = e.find("port");
    if (port != e.end() && port->is_number_unsigned() && *port <= 65535u) {
      return port->get<int>();
    }
  }
  return -1;
}

// `line` without the prefix EventLog puts before a human line: "pstrain
// rank N (role): ", "pstrain: " or none.
std::string_view WithoutPrefix(std::string_view line) {
  constexpr std::string_view kPlain = "pstrain: ", kRank = "pstrain rank ";
  if (line.substr(0, kPlain.size()) == kPlain)
    return line.substr(kPlain.size());
  if (line.substr(0, kRank.size()) != kRank)
    return line;
  size_t at = kRank.size();
  const size_t digits = at;
  while (at < line.size() && line[at] >= '0' && line[at] <= '9')
    ++at;
  if (at == digits || line.substr(at, 2) != " (")
    return line;
  const size_t close = line.find("): ", at + 2);
  if (close == std::string_view::npos)
    return line;
  for (size_t k = at + 2; k < close; ++k) {
    if (line[k] < 'a' || line[k] > 'z')
      return line;  // a role: "server", ...
  }
  return line.substr(close + 3);
}

// The port of the first "listen" event among the human lines of `err`:
// "listen k=v k=v ...", fields in the order of their keys (a JSON object's),
// so "port=N" comes after "host=" and "job={...}" and before the numbers
// "slices=" and "world_size=". A string within the job (a path, say) may
// hold " port=" too, but only before the field itself: the last " port=N"
// followed by a space or the end of the line is the field.
int HumanListenPort(std::string_view err) {
  constexpr std::string_view kEvent = "listen ", kField = " port=";
  for (std::string_view line : WholeLines(err)) {
    const std::string_view rest = WithoutPrefix(line);
    if (rest.substr(0, kEvent.size()) != kEvent)
      continue;
    for (size_t at = rest.rfind(kField); at != std::string_view::npos && at > 0;
         at = rest.rfind(kField, at - 1)) {
      const size_t from = at + kField.size();
      size_t end = rest.find(' ', from);
      if (end == std::string_view::npos)
        end = rest.size();
      const int port = ParsePort(rest.substr(from, end - from));
      if (port >= 0)
        return port;
    }
  }
  return -1;
}

// The last `n` characters of `text`, marked as such when cut.
std::string Tail(const std::string& text, size_t n = 4000) {
  if (text.size() <= n)
    return text;
  return "[...]" + text.substr(text.size() - n);
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
  for (const auto& a : args)
    command_ += (command_.empty() ? "" : " ") + a;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
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

std::string Process::OutSoFar() const {
  return Slurp(out_path_);
}

int ListeningPort(pid_t pid) {
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator(fd_dir, ec)) {
    std::string target = std::filesystem::read_symlink(fd.path(), ec);
    if (!ec && target.rfind("socket:[", 0) == 0)
      inodes.insert(target.substr(8, target.size() - 9));
  }
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::istringstream lines(Slurp("/proc/" + std::to_string(pid) + table));
    std::string line;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, tr, retr, uid, timeout,
          inode;
      f >> sl >> local >> remote >> state >> queues >> tr >> retr >> uid >>
          timeout >> inode;
      if (state == "0A" && inodes.count(inode) > 0)
        return std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16);
    }
  }
  return -1;
}

bool Process::WaitForErr(const std::string& text,
                         double timeout_seconds) const {
  const double deadline = Now() + timeout_seconds;
  while (Slurp(err_path_).find(text) == std::string::npos) {
    if (Now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

bool Process::Exited(int* exit_code) const {
  *exit_code = -1;
  if (reaped_)
    return true;
  siginfo_t info{};
  if (::waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid != pid_) {
    return false;
  }
  *exit_code =
      info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
  return true;
}

int Process::ListenPort(double timeout_seconds) const {
  const double deadline = Now() + timeout_seconds;
  for (;;) {
    // Whether it had exited before its output is read: then all of it is.
    int exit_code = -1;
    const bool exited = Exited(&exit_code);
    const std::string out = Slurp(out_path_), err = Slurp(err_path_);
    int port = JsonListenPort(out);
    if (port < 0)
      port = HumanListenPort(err);
    if (port >= 0)
      return port;
    if (exited || Now() > deadline) {
      ADD_FAILURE()
          << "expected a `listen` event (with the port it listens on) from `"
          << command_ << "` (pid " << pid_ << ") within " << timeout_seconds
          << " s, but it "
          << (exited ? "exited with status " + std::to_string(exit_code) +
                           " without one"
                     : std::string("emitted none"))
          << "\nits stdout:\n"
          << Tail(out) << "\nits stderr:\n"
          << Tail(err);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Process::Signal(int sig) {
  if (!reaped_)
    ::kill(pid_, sig);
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
  r.exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

int MappedShmSegments(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find("memfd:pstrain-shm") != std::string::npos;
  return n;
}

}  // namespace pstrain::testing
