#pragma once
// KeyFormats: what each key of a server is called and how it travels: the
// model's fingerprint (the keys every worker must match), the job's
// compression, the codec each key's pushes must carry (a row-sparse key's:
// its rows'), the --pull_compression records of the parameters sent, and
// the params message's descriptors, built once.
//
// Threading: not thread-safe; the Engine's thread only.

#include <string>
#include <vector>

#include "ps/engine/pull_records.h"
#include "ps/job/compression_spec.h"
#include "ps/job/job_spec.h"
#include "ps/store/parameter_server.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct KeyFormats {
  /// The formats of `server`'s keys in the job `spec`.
  /// REQUIRES: the spec's compression is valid (CompressionOf is ok).
  KeyFormats(const JobSpec& spec, std::vector<wire::KeySpec> fingerprint,
             const ParameterServer& server);
  KeyFormats(const KeyFormats&) = delete;
  KeyFormats& operator=(const KeyFormats&) = delete;

  /// Key `key`'s name in the fingerprint; "?" out of range.
  std::string Name(int key) const;

  std::vector<wire::KeySpec> fingerprint;
  CompressionSpec compression;
  std::vector<wire::Codec> push;                // by key: what its pushes carry
  PullRecords pull;                             // --pull_compression's records
  wire::Params params_msg;                      // a reply's, reused
  std::vector<wire::TensorDesc> params_by_key;  // descriptors, built once
  std::vector<int> order;  // scratch: a push's keys, reused
};

}  // namespace pstrain::ps
