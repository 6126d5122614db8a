#pragma once
// The handover of a shared-memory segment from a worker to a server on the
// same host, once their TCP connection is up and, under a token,
// authenticated (share/doc/wire-format.md, "Shared memory"):
//
//  1. The worker sends shm_offer with its HostIdentity(). The server, if
//     its --transport allows and the identity is its own, answers
//     shm_ticket: the name of its handover socket (a Unix socket in the
//     abstract namespace: no file, gone with the process) and a one-time
//     cookie of 16 random bytes tied to that connection; else a reason.
//  2. The worker creates the segment (net/shm_segment.h) and four
//     doorbells (each end's "data" and "room", net/shm_stream.h) and sends
//     the cookie with the five descriptors over that socket (SCM_RIGHTS,
//     one SOCK_SEQPACKET message).
//  3. The server takes the cookie back (once; a cookie it did not give, or
//     gave to a connection that is gone, is refused), checks the peer's
//     uid, the segment and that the doorbells are four distinct nonblocking
//     eventfds, moves that connection onto the rings, and answers one
//     byte: 1, or 0 with the worker staying on TCP.
//
// So a process that never proved the token never gets a cookie, and one
// that guesses cannot attach: the cookie is 128 bits, and used once.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>

#include "net/shm_stream.h"
#include "net/transport.h"
#include "util/result.h"
#include "util/status.h"

namespace pstrain::net {

class Client;
class Connection;

/// The server's half. Threading: the io_context's thread. `*io` must
/// outlive it.
class ShmAcceptor {
 public:
  ShmAcceptor(asio::io_context* io, ShmStreamOptions options = {});
  ~ShmAcceptor();
  ShmAcceptor(const ShmAcceptor&) = delete;
  ShmAcceptor& operator=(const ShmAcceptor&) = delete;

  /// Opens the handover socket. kUnavailable when it cannot be had (then
  /// every offer is answered with that reason).
  Status Listen();
  /// Stops taking handovers (the io_context may then run out of work).
  void Close();
  /// The socket's abstract name (without the leading NUL); "" before Listen.
  const std::string& socket_name() const { return name_; }

  /// A cookie that moves `conn` onto shared memory when its worker hands
  /// a segment over with it; valid once, for `ttl`.
  std::string IssueTicket(
      const std::shared_ptr<Connection>& conn,
      std::chrono::milliseconds ttl = std::chrono::seconds(30));
  /// Connections moved so far, and handovers refused.
  uint64_t attached() const { return attached_; }
  uint64_t refused() const { return refused_; }
  /// Why the last handover was refused ("" when none was).
  const std::string& last_refusal() const { return last_refusal_; }

 private:
  struct Ticket {
    std::weak_ptr<Connection> conn;
    std::chrono::steady_clock::time_point expires;
  };
  void Accept();
  void Receive(std::shared_ptr<asio::posix::stream_descriptor> peer);
  // fds: the segment and the four doorbells, as the handover sent them.
  Status Handover(int socket, int* fds, const std::string& cookie);

  asio::io_context* io_;
  ShmStreamOptions options_;
  std::unique_ptr<asio::posix::stream_descriptor> listener_;
  std::string name_;
  std::map<std::string, Ticket> tickets_;
  uint64_t attached_ = 0;
  uint64_t refused_ = 0;
  std::string last_refusal_;
};

/// Step 3's check of the doorbells a handover brought: each of the `n`
/// descriptors at `bells` is a nonblocking eventfd (EFD_NONBLOCK: the io
/// thread reads and rings them) that has not rung, and no two are
/// the same eventfd (one purpose's drain would take the other's ring).
/// kInvalidArgument naming the first that is not. Rings and drains each.
Status CheckDoorbells(const int* bells, int n);

/// The worker's half of steps 2 and 3: creates a segment with rings of
/// `ring_bytes`, hands it to the server's socket `socket_name` with
/// `cookie`, and waits up to `timeout` for the answer. Returns the stream
/// for io's thread on success; kUnavailable (the caller stays on TCP) with
/// the reason otherwise.
Result<std::unique_ptr<ShmStream>> ConnectShm(
    asio::io_context& io, const std::string& socket_name,
    const std::string& cookie, std::chrono::milliseconds timeout,
    uint64_t ring_bytes = ShmSegment::kDefaultRingBytes,
    ShmStreamOptions options = {});

/// The worker's whole upgrade of `client` (connected and, under a token,
/// authenticated; the server has had its hello): steps 1 to 3. Ok: the
/// client's frames go through shared memory from now on. kUnavailable
/// with the server's or our reason (another host, --transport tcp, no
/// memfd, ...): the client stays on TCP, as it was. Other errors are the
/// connection's (a timeout, a closed peer).
Status OfferShm(Client* client, std::chrono::milliseconds timeout,
                uint64_t ring_bytes = ShmSegment::kDefaultRingBytes,
                ShmStreamOptions options = {});

}  // namespace pstrain::net
