#pragma once
// MasterAddress: where a worker finds rank 0's roles, the master. At
// --master_addr:--master_port, or, under --rdzv_backend etcd, where the
// master says it listens in etcd (rdzv/master_key.h): after the master
// was lost, a successor's address, which differs from the lost one.

#include <chrono>
#include <string>

#include "util/status.h"

namespace pstrain::rdzv {
class MasterKey;
}  // namespace pstrain::rdzv

namespace pstrain::worker {

class MasterAddress {
 public:
  /// `key`: nullptr (the master is always at `host`:`port`), or etcd's
  /// key of the job's master, which must outlive this object.
  /// `timeout`: how long the first Find waits for a master.
  MasterAddress(std::string host, int port, rdzv::MasterKey* key,
                std::chrono::milliseconds timeout);

  /// Where the master listens now, in *host and *port. `again`: the
  /// master that this found last was lost, so wait up to twice its lease
  /// (rdzv::LeaseFor(dead_after), `dead_after` in seconds) for another to
  /// say where it listens, then take whichever is there; else up to
  /// `timeout` for any. Errors: rdzv::MasterKey::Find's, and kCorruption
  /// for an address that is no "host:port".
  Status Find(bool again, double dead_after, std::string* host, int* port);

 private:
  std::string host_;
  int port_;
  rdzv::MasterKey* key_;
  std::chrono::milliseconds timeout_;
  std::string found_;  // the last address Find gave, "" before
};

}  // namespace pstrain::worker
