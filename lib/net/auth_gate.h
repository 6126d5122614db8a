#pragma once
// AuthGate: the server's half of token authentication (net/auth.h,
// share/doc/wire-format.md "Authentication") for one connection. Until the
// client has proven that it knows the token, the gate admits nothing but
// the exchange itself: auth_hello, then auth. A value type; not
// thread-safe (one per connection, used on the io thread).

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"
#include "wire/frame.h"

namespace pstrain::net {

class AuthGate {
 public:
  /// `token` empty: no authentication; the gate is open from the start.
  explicit AuthGate(std::string token = {});

  /// Whether other frames may pass: the client proved the token, or there
  /// is none.
  bool open() const { return state_ == State::kOpen; }

  /// Checks a frame's header before its meta is used, while !open(): only
  /// the expected auth message, at most 1 KiB, no data. kInvalidArgument
  /// "authentication required: expected auth_hello first, got hello" else.
  Status CheckFrame(wire::MsgType type, uint64_t body_len,
                    uint64_t data_bytes) const;

  /// Handles the frame CheckFrame admitted. Sets the reply to send: a
  /// challenge to auth_hello, an ack to a right proof (the gate opens).
  /// kInvalidArgument "authentication failed" for a wrong proof, or the
  /// decode error; the caller sends it and closes.
  Status OnFrame(wire::MsgType type, std::string_view meta,
                 wire::MsgType* reply_type, std::string* reply_meta);

 private:
  enum class State { kAwaitHello, kAwaitProof, kOpen };

  std::string token_;
  State state_;
  std::string client_nonce_;
  std::string server_nonce_;
};

}  // namespace pstrain::net
