#include "testing/fake_master.h"

#include <asio/read.hpp>
#include <asio/write.hpp>

#include "wire/messages.h"

namespace pstrain::testing {

FakeMaster::FakeMaster(std::string job_json, std::string module_sha256,
                       std::string module_bytes)
    : job_json_(std::move(job_json)),
      module_sha256_(std::move(module_sha256)),
      module_bytes_(std::move(module_bytes)),
      acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}),
      socket_(io_),
      port_(acceptor_.local_endpoint().port()) {
  acceptor_.async_accept(socket_, [this](const asio::error_code& ec) {
    if (!ec)
      ReadHeader();
  });
  thread_ = std::thread([this] { io_.run(); });
}

FakeMaster::~FakeMaster() {
  io_.stop();
  thread_.join();
}

void FakeMaster::ReadHeader() {
  asio::async_read(socket_, asio::buffer(header_bytes_),
                   [this](const asio::error_code& ec, size_t) {
                     if (ec)
                       return;
                     Status s = wire::DecodeFrameHeader(header_bytes_, 1 << 20,
                                                        &header_);
                     if (s.ok())
                       ReadBody();
                   });
}

void FakeMaster::ReadBody() {
  body_.resize(header_.body_len);
  asio::async_read(socket_, asio::buffer(body_),
                   [this](const asio::error_code& ec, size_t) {
                     if (!ec)
                       Answer();
                   });
}

void FakeMaster::Answer() {
  std::string meta;
  wire::MsgType type;
  if (header_.type == wire::MsgType::kHello) {
    type = wire::MsgType::kHello;
    wire::EncodeMeta(wire::Hello{wire::Role::kServer, 0, 0}, &meta);
  } else if (header_.type == wire::MsgType::kGetJob) {
    type = wire::MsgType::kJobSpec;
    wire::EncodeMeta(wire::JobSpecMsg{job_json_}, &meta);
  } else if (header_.type == wire::MsgType::kGetModule) {
    type = wire::MsgType::kModule;
    wire::ModuleMsg msg;
    msg.sha256 = module_sha256_;
    msg.bytes.dtype = wire::DType::kUInt8;
    msg.bytes.ndim = 1;
    msg.bytes.dims[0] = static_cast<int64_t>(module_bytes_.size());
    msg.bytes.nbytes = module_bytes_.size();
    wire::EncodeMeta(msg, &meta);
  } else {
    return;
  }
  const std::string& data =
      type == wire::MsgType::kModule ? module_bytes_ : std::string();
  wire::EncodeFramePrefix(type, header_.request_id, meta, data.size(), &reply_);
  reply_ += data;
  asio::async_write(socket_, asio::buffer(reply_),
                    [this](const asio::error_code& ec, size_t) {
                      if (!ec)
                        ReadHeader();
                    });
}

}  // namespace pstrain::testing
