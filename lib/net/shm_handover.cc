#include "net/shm_handover.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include <asio/steady_timer.hpp>
#include <openssl/rand.h>

#include "net/client.h"
#include "net/connection.h"
#include "wire/messages.h"

namespace pstrain::net {

namespace {

constexpr size_t kCookieBytes =
    wire::kShmCookieChars;  // hex of 16 random bytes
// The segment, then the server's data and room doorbells, then the
// worker's.
constexpr int kFds = 5;
// A handover socket that says nothing for this long is closed.
constexpr std::chrono::seconds kHandoverTimeout{5};

std::string Hex(const unsigned char* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

std::string RandomBytes(size_t n) {
  std::string s(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(s.data()),
                 static_cast<int>(n)) != 1) {
    // No randomness: a cookie nobody can match.
    return {};
  }
  return s;
}

socklen_t AbstractAddress(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(addr->sun_path) - 1);
  std::memcpy(addr->sun_path + 1, name.data(), n);  // sun_path[0] = 0
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

Status Errno(const std::string& what) {
  return Unavailable("shared memory: " + what + ": " + std::strerror(errno));
}

void CloseAll(int* fds, int n) {
  for (int i = 0; i < n; ++i) {
    if (fds[i] >= 0)
      ::close(fds[i]);
    fds[i] = -1;
  }
}

// Whether `fd` is an eventfd: its /proc link names the anonymous inode.
bool IsEventFd(int fd) {
  char link[64];
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(path.c_str(), link, sizeof(link) - 1);
  return n > 0 && std::string_view(link, static_cast<size_t>(n)) ==
                      "anon_inode:[eventfd]";
}

}  // namespace

// Each doorbell is rung in turn, and only it may then be readable: two
// descriptors of one eventfd share one inode with every other eventfd, so
// fstat cannot tell them apart.
Status CheckDoorbells(const int* bells, int n) {
  for (int i = 0; i < n; ++i) {
    if (!IsEventFd(bells[i]))
      return InvalidArgument("a handover's doorbell " + std::to_string(i) +
                             " is not an eventfd");
    // The io thread reads and rings the bells: a blocking one would hold
    // it until the peer rang (a read) or drained it (a ring).
    const int flags = ::fcntl(bells[i], F_GETFL);
    if (flags < 0 || (flags & O_NONBLOCK) == 0)
      return InvalidArgument("a handover's doorbell " + std::to_string(i) +
                             " blocks, expected a nonblocking eventfd");
  }
  uint64_t count;
  for (int i = 0; i < n; ++i) {
    if (::read(bells[i], &count, sizeof(count)) > 0)
      return InvalidArgument("a handover's doorbell " + std::to_string(i) +
                             " rang before the handover");
  }
  const uint64_t one = 1;
  for (int i = 0; i < n; ++i) {
    if (::write(bells[i], &one, sizeof(one)) !=
        static_cast<ssize_t>(sizeof(one)))
      return InvalidArgument("a handover's doorbell cannot be rung");
    for (int j = 0; j < n; ++j) {
      if (j != i && ::read(bells[j], &count, sizeof(count)) > 0)
        return InvalidArgument("a handover's doorbells " + std::to_string(i) +
                               " and " + std::to_string(j) +
                               " are one eventfd, expected distinct ones");
    }
    (void)!::read(bells[i], &count, sizeof(count));
  }
  return Status::Ok();
}

ShmAcceptor::ShmAcceptor(asio::io_context* io, ShmStreamOptions options)
    : io_(io), options_(options) {}

ShmAcceptor::~ShmAcceptor() {
  Close();
}

void ShmAcceptor::Close() {
  if (listener_) {
    std::error_code ignored;
    listener_->close(ignored);
  }
}

Status ShmAcceptor::Listen() {
  const std::string nonce = RandomBytes(8);
  if (nonce.empty())
    return Unavailable("shared memory: no random bytes for a socket name");
  std::string name =
      "pstrain-shm-" + std::to_string(::getpid()) + "-" +
      Hex(reinterpret_cast<const unsigned char*>(nonce.data()), nonce.size());
  const int fd =
      ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return Errno("socket");
  sockaddr_un addr;
  const socklen_t len = AbstractAddress(name, &addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(fd, 64) != 0) {
    Status s = Errno("listen on @" + name);
    ::close(fd);
    return s;
  }
  listener_ = std::make_unique<asio::posix::stream_descriptor>(*io_, fd);
  name_ = std::move(name);
  Accept();
  return Status::Ok();
}

std::string ShmAcceptor::IssueTicket(const std::shared_ptr<Connection>& conn,
                                     std::chrono::milliseconds ttl) {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = tickets_.begin(); it != tickets_.end();) {
    it = it->second.expires < now || it->second.conn.expired()
             ? tickets_.erase(it)
             : std::next(it);
  }
  const std::string random = RandomBytes(kCookieBytes / 2);
  if (random.empty())
    return random;
  std::string cookie =
      Hex(reinterpret_cast<const unsigned char*>(random.data()), random.size());
  tickets_[cookie] = Ticket{conn, now + ttl};
  return cookie;
}

void ShmAcceptor::Accept() {
  listener_->async_wait(
      asio::posix::descriptor_base::wait_read,
      [this](const std::error_code& ec) {
        if (ec)
          return;  // closed
        for (;;) {
          const int fd = ::accept4(listener_->native_handle(), nullptr, nullptr,
                                   SOCK_CLOEXEC | SOCK_NONBLOCK);
          if (fd < 0)
            break;
          Receive(std::make_shared<asio::posix::stream_descriptor>(*io_, fd));
        }
        Accept();
      });
}

// One message: the cookie, with the five descriptors. A socket that sends
// nothing in kHandoverTimeout is closed.
void ShmAcceptor::Receive(
    std::shared_ptr<asio::posix::stream_descriptor> peer) {
  auto timer = std::make_shared<asio::steady_timer>(*io_, kHandoverTimeout);
  timer->async_wait([peer](const std::error_code& ec) {
    std::error_code ignored;
    if (!ec)
      peer->close(ignored);
  });
  peer->async_wait(
      asio::posix::descriptor_base::wait_read,
      [this, peer, timer](const std::error_code& ec) {
        timer->cancel();
        if (ec)
          return;
        char cookie[kCookieBytes + 1];
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kFds)];
        iovec iov{cookie, sizeof(cookie)};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
        const ssize_t n = ::recvmsg(peer->native_handle(), &msg,
                                    MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        int fds[kFds] = {-1, -1, -1, -1, -1};
        int got = 0;
        for (cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&msg) : nullptr; c != nullptr;
             c = CMSG_NXTHDR(&msg, c)) {
          if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
          const int count =
              static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
          for (int i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (got < kFds)
              fds[got++] = fd;
            else
              ::close(fd);
          }
        }
        Status s;
        if (n != static_cast<ssize_t>(kCookieBytes) || got != kFds ||
            (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
          s = InvalidArgument(
              "a handover is a 32-digit cookie and 5 descriptors");
        } else {
          s = Handover(peer->native_handle(), fds,
                       std::string(cookie, kCookieBytes));
        }
        CloseAll(fds, kFds);
        if (s.ok()) {
          ++attached_;
        } else {
          ++refused_;
          last_refusal_ = s.message();
        }
        const char answer = s.ok() ? 1 : 0;
        (void)!::send(peer->native_handle(), &answer, 1,
                      MSG_DONTWAIT | MSG_NOSIGNAL);
        std::error_code ignored;
        peer->close(ignored);
      });
}

// Takes the descriptors it keeps out of fds[] (set to -1).
Status ShmAcceptor::Handover(int socket, int* fds, const std::string& cookie) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      cred.uid != ::getuid()) {
    return InvalidArgument("a handover from another user");
  }
  auto it = tickets_.find(cookie);
  if (it == tickets_.end())
    return InvalidArgument("a handover with a cookie this server did not give");
  Ticket ticket = it->second;
  tickets_.erase(it);  // once
  std::shared_ptr<Connection> conn = ticket.conn.lock();
  if (!conn || conn->closed() ||
      ticket.expires < std::chrono::steady_clock::now()) {
    return Unavailable("a handover for a connection that is gone");
  }
  PS_ASSIGN_OR_RETURN(ShmSegment segment, ShmSegment::Attach(fds[0]));
  PS_RETURN_IF_ERROR(CheckDoorbells(fds + 1, kFds - 1));
  auto stream = std::make_unique<ShmStream>(
      *io_, std::move(segment), /*server_end=*/true, ShmBells{fds[1], fds[2]},
      ShmBells{fds[3], fds[4]}, options_);
  for (int i = 1; i < kFds; ++i)
    fds[i] = -1;  // the stream's now
  return conn->UseShm(std::move(stream));
}

Result<std::unique_ptr<ShmStream>> ConnectShm(asio::io_context& io,
                                              const std::string& socket_name,
                                              const std::string& cookie,
                                              std::chrono::milliseconds timeout,
                                              uint64_t ring_bytes,
                                              ShmStreamOptions options) {
  PS_ASSIGN_OR_RETURN(ShmSegment segment, ShmSegment::Create(ring_bytes));
  // The server's data and room doorbells, then ours.
  int bells[4];
  for (int& b : bells)
    b = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  const int sock = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  auto fail = [&](Status s) {
    CloseAll(bells, 4);
    if (sock >= 0)
      ::close(sock);
    return s;
  };
  for (int b : bells) {
    if (b < 0)
      return fail(Errno("eventfd"));
  }
  if (sock < 0)
    return fail(Errno("socket"));
  sockaddr_un addr;
  const socklen_t len = AbstractAddress(socket_name, &addr);
  if (::connect(sock, reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return fail(Errno("connect to @" + socket_name));
  const int fds[kFds] = {segment.fd(), bells[0], bells[1], bells[2], bells[3]};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(fds))] = {};
  iovec iov{const_cast<char*>(cookie.data()), cookie.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(fds));
  std::memcpy(CMSG_DATA(c), fds, sizeof(fds));
  if (::sendmsg(sock, &msg, MSG_NOSIGNAL) !=
      static_cast<ssize_t>(cookie.size()))
    return fail(Errno("hand the segment over"));
  pollfd p{sock, POLLIN, 0};
  char answer = 0;
  if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1 ||
      ::recv(sock, &answer, 1, 0) != 1) {
    return fail(
        Unavailable("shared memory: the server did not answer the handover"));
  }
  if (answer != 1)
    return fail(Unavailable("shared memory: the server refused the handover"));
  ::close(sock);
  segment.CloseFd();
  return std::make_unique<ShmStream>(
      io, std::move(segment), /*server_end=*/false,
      ShmBells{bells[2], bells[3]}, ShmBells{bells[0], bells[1]}, options);
}

Status OfferShm(Client* client, std::chrono::milliseconds timeout,
                uint64_t ring_bytes, ShmStreamOptions options) {
  std::string meta;
  wire::EncodeMeta(wire::ShmOffer{HostIdentity()}, &meta);
  FrameBuffers& request = client->NewRequest();
  request.Reset(wire::MsgType::kShmOffer, 0, meta);
  wire::MsgType type;
  PS_RETURN_IF_ERROR(client->Call(request, nullptr, timeout, &type));
  if (type != wire::MsgType::kShmTicket) {
    return Corruption(std::string("the server answered shm_offer with ") +
                      wire::MsgTypeName(type));
  }
  wire::ShmTicket ticket;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(client->reply_meta(), &ticket));
  if (!ticket.refusal.empty())
    return Unavailable(ticket.refusal);
  PS_ASSIGN_OR_RETURN(std::unique_ptr<ShmStream> stream,
                      ConnectShm(client->io(), ticket.socket_name,
                                 ticket.cookie, timeout, ring_bytes, options));
  return client->UseShm(std::move(stream));
}

}  // namespace pstrain::net
