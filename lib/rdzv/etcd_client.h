#pragma once
// EtcdClient: the few calls of etcd's v3 API that a job's rendezvous needs
// (leases, one transaction, reads), over its JSON gateway (POST /v3/...,
// keys and values base64 in the body), one blocking HTTP/1.1 request per
// call. etcd's own documentation: "gRPC gateway" in etcd's API guide; the
// transaction is its "compare and swap" (etcd API reference, KV.Txn).
//
// Threading: calls may come from several threads at once; each is a
// request of its own.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "util/result.h"

namespace pstrain::rdzv {

class EtcdClient {
 public:
  /// `endpoint`: "host:port" of an etcd member's client URL (plain HTTP).
  /// `timeout`: the most one call takes, connecting included.
  EtcdClient(std::string endpoint, std::chrono::milliseconds timeout);

  /// A new lease of `ttl` seconds (etcd raises it to its minimum, about
  /// 2 s). Returns its ID.
  Result<int64_t> GrantLease(int64_t ttl);
  /// Renews `lease`; returns the seconds it has left, 0 once it expired or
  /// was revoked (then every key under it is gone).
  Result<int64_t> KeepAlive(int64_t lease);
  /// Ends `lease` now, deleting its keys.
  Status Revoke(int64_t lease);

  /// Puts key = value under `lease` only where `key` does not exist.
  /// Returns the revision that created it, or nullopt where it exists.
  Result<std::optional<int64_t>> Create(const std::string& key,
                                        const std::string& value,
                                        int64_t lease);
  /// Puts key = value under `lease` only while `key` was created at
  /// `revision` (the caller's own key, not a later holder's); false where
  /// it was not.
  Result<bool> Update(const std::string& key, const std::string& value,
                      int64_t lease, int64_t revision);

  struct Entry {
    std::string value;
    int64_t create_revision = 0;  // the revision that created the key
  };
  /// The key's value and creation; nullopt where it does not exist.
  Result<std::optional<Entry>> Get(const std::string& key);

  /// This host's address on its connection to etcd, after a call that
  /// connected: the interface the rest of the job most likely reaches
  /// too. "" before.
  std::string local_address() const;

  /// Errors of every call: kInvalidArgument naming the endpoint where it
  /// is no "host:port", kUnavailable where etcd cannot be reached or
  /// answers with an error, kTimeout past `timeout`, kCorruption where
  /// its answer is not what its API documents.
 private:
  // One request: the JSON body's text in, the answer's text out.
  Result<std::string> Post(const std::string& path, const std::string& body);

  std::string endpoint_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::string local_address_;  // guarded by mu_
};

}  // namespace pstrain::rdzv
