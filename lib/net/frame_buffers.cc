#include "net/frame_buffers.h"

#include "wire/messages.h"

namespace pstrain::net {

void FrameBuffers::Reset(wire::MsgType type, uint64_t request_id,
                         std::string_view meta) {
  type_ = type;
  request_id_ = request_id;
  meta_.assign(meta.data(), meta.size());
  data_.clear();
  marks_.clear();
  gate_ = nullptr;
  observer_ = nullptr;
  data_bytes_ = 0;
}

void FrameBuffers::AddData(const void* data, size_t size, uint32_t mark) {
  if (size == 0)
    return;
  data_.emplace_back(data, size);
  marks_.push_back(mark);
  data_bytes_ += size;
}

const std::vector<asio::const_buffer>& FrameBuffers::Finish() {
  wire::EncodeFramePrefix(type_, request_id_, meta_, data_bytes_, &prefix_);
  buffers_.clear();
  buffers_.emplace_back(prefix_.data(), prefix_.size());
  buffers_.insert(buffers_.end(), data_.begin(), data_.end());
  return buffers_;
}

}  // namespace pstrain::net
