#pragma once
// FetchModule: how a process other than rank 0 gets the job's TorchScript
// module (--model PATH): one get_module request to rank 0, whose module
// reply carries the file's bytes in its data section, read straight into
// the buffer that keeps them (wire::ModuleMsg). Used by workers
// (worker/ps_client.h) and servers 1..S-1 (ps/rank/master_client.h).
// Free function; as thread-safe as the client it is given.

#include <chrono>
#include <memory>
#include <string>

#include "net/client.h"
#include "util/result.h"

namespace pstrain::ps {

/// Asks rank 0, behind `client` (connected, past its hello), for the job's
/// module and waits up to `timeout`. Returns the bytes once their SHA-256
/// (Sha256Hex) is `sha256`, the job spec's model_sha256. Errors:
/// rank 0's error frame as sent; kTimeout or kUnavailable as Client::Call;
/// kCorruption for a reply that is not a module, whose hash is not the
/// job's, or whose bytes hash to something else ("the module from rank 0
/// has SHA-256 x, the job's is y").
Result<std::shared_ptr<const std::string>> FetchModule(
    net::Client* client, std::chrono::milliseconds timeout,
    const std::string& sha256);

}  // namespace pstrain::ps
