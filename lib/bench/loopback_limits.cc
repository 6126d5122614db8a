#include "bench/loopback_limits.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace pstrain::bench {

namespace {

using Clock = std::chrono::steady_clock;

Status Errno(const char* what) {
  return IOError(std::string(what) + ": " + std::strerror(errno));
}

// A connected pair of loopback TCP sockets; closes both on destruction.
struct SocketPair {
  int a = -1, b = -1;
  ~SocketPair() {
    if (a >= 0)
      ::close(a);
    if (b >= 0)
      ::close(b);
  }
};

Status Connect(SocketPair* pair) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0)
    return Errno("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Status s = Errno("listen");
    ::close(listener);
    return s;
  }
  pair->a = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(pair->a, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
      0) {
    Status s = Errno("connect");
    ::close(listener);
    return s;
  }
  pair->b = ::accept(listener, nullptr, nullptr);
  ::close(listener);
  if (pair->b < 0)
    return Errno("accept");
  int one = 1;
  ::setsockopt(pair->a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::setsockopt(pair->b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return Status::Ok();
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool RecvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Result<double> MeasureTcpStream(uint64_t bytes, double seconds) {
  SocketPair pair;
  PS_RETURN_IF_ERROR(Connect(&pair));
  std::vector<char> out(bytes, 1), in(bytes);
  // The receiver counts messages until the sender's end-of-stream.
  uint64_t received = 0;
  std::thread receiver([&] {
    while (RecvAll(pair.b, in.data(), in.size()))
      ++received;
  });
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  uint64_t sent = 0;
  while (Clock::now() < deadline || sent < 3) {
    if (!SendAll(pair.a, out.data(), out.size()))
      break;
    ++sent;
  }
  ::shutdown(pair.a, SHUT_WR);
  receiver.join();
  const double elapsed = Seconds(Clock::now() - start);
  if (received != sent)
    return IOError("tcp stream: lost messages");
  return received * static_cast<double>(bytes) / elapsed / 1e9;
}

Result<double> MeasureTcpRoundTrip(uint64_t bytes, double seconds) {
  SocketPair pair;
  PS_RETURN_IF_ERROR(Connect(&pair));
  std::vector<char> buf_a(bytes, 1), buf_b(bytes);
  std::thread echo([&] {
    while (RecvAll(pair.b, buf_b.data(), buf_b.size()) &&
           SendAll(pair.b, buf_b.data(), buf_b.size())) {
    }
  });
  std::vector<double> rtts;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  bool ok = true;
  while (ok && (Clock::now() < deadline || rtts.size() < 5)) {
    auto t0 = Clock::now();
    ok = SendAll(pair.a, buf_a.data(), bytes) &&
         RecvAll(pair.a, buf_a.data(), bytes);
    rtts.push_back(Seconds(Clock::now() - t0) * 1e6);
  }
  ::shutdown(pair.a, SHUT_WR);
  echo.join();
  if (!ok)
    return IOError("tcp round trip: connection failed");
  std::nth_element(rtts.begin(), rtts.begin() + rtts.size() / 2, rtts.end());
  return rtts[rtts.size() / 2];
}

double MeasureMemcpy(uint64_t bytes, double seconds) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  // Read the clock once per batch of about 1 MiB so it does not dominate.
  const uint64_t batch =
      std::max<uint64_t>(1, (uint64_t{1} << 20) / std::max<uint64_t>(1, bytes));
  uint64_t copies = 0;
  while (Clock::now() < deadline || copies < 3) {
    for (uint64_t i = 0; i < batch; ++i, ++copies) {
      std::memcpy(copies % 2 ? a.data() : b.data(),
                  copies % 2 ? b.data() : a.data(), bytes);
    }
  }
  const double elapsed = Seconds(Clock::now() - start);
  // Keep the copies observable so the compiler cannot drop them.
  volatile char sink = a[bytes / 2] + b[bytes / 3];
  (void)sink;
  return copies * static_cast<double>(bytes) / elapsed / 1e9;
}

}  // namespace pstrain::bench
