#include "ps/job/module_fetch.h"

#include <utility>

#include "util/sha256.h"
#include "wire/messages.h"

namespace pstrain::ps {
namespace {

// Where a module reply's bytes land: a string of the size its descriptor
// says, which the caller keeps.
class ModuleSink : public net::ReplySink {
 public:
  Status OnMeta(const wire::FrameHeader& header, std::string_view meta,
                uint64_t data_bytes,
                std::vector<asio::mutable_buffer>* dst) override {
    if (header.type != wire::MsgType::kModule) {
      return Corruption(std::string("rank 0 answered get_module with ") +
                        wire::MsgTypeName(header.type));
    }
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &msg_));
    if (msg_.bytes.nbytes != data_bytes) {
      return Corruption("module: " + std::to_string(msg_.bytes.nbytes) +
                        " bytes described, " + std::to_string(data_bytes) +
                        " sent");
    }
    bytes_ = std::make_shared<std::string>(data_bytes, '\0');
    if (data_bytes > 0)
      dst->push_back(asio::buffer(bytes_->data(), data_bytes));
    return Status::Ok();
  }

  const wire::ModuleMsg& msg() const { return msg_; }
  std::shared_ptr<std::string> take() { return std::move(bytes_); }

 private:
  wire::ModuleMsg msg_;
  std::shared_ptr<std::string> bytes_;
};

}  // namespace

Result<std::shared_ptr<const std::string>> FetchModule(
    net::Client* client, std::chrono::milliseconds timeout,
    const std::string& sha256) {
  std::string meta;
  wire::EncodeMeta(wire::GetModule{}, &meta);
  net::FrameBuffers& req = client->NewRequest();
  req.Reset(wire::MsgType::kGetModule, 0, meta);
  ModuleSink sink;
  wire::MsgType got;
  Status s = client->Call(req, &sink, timeout, &got);
  if (!s.ok() && !client->error_from_peer())
    return s.WithContext("fetching the job's module from rank 0");
  PS_RETURN_IF_ERROR(s);
  if (sink.msg().sha256 != sha256) {
    return Corruption("the module from rank 0 is named SHA-256 " +
                      sink.msg().sha256 + ", the job's is " + sha256);
  }
  std::shared_ptr<std::string> bytes = sink.take();
  if (!bytes)
    bytes = std::make_shared<std::string>();
  const std::string got_hash = Sha256Hex(*bytes);
  if (got_hash != sha256) {
    return Corruption("the module from rank 0 has SHA-256 " + got_hash +
                      ", the job's is " + sha256);
  }
  return std::shared_ptr<const std::string>(std::move(bytes));
}

}  // namespace pstrain::ps
