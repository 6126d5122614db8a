#include "net/frame_buffers.h"

#include "wire/frame.h"
#include "wire/messages.h"

namespace pstrain::net {

void FrameBuffers::Reset(wire::MsgType type, uint64_t request_id,
                         std::string_view meta) {
  type_ = type;
  request_id_ = request_id;
  meta_.assign(meta.data(), meta.size());
  data_.clear();
  marks_.clear();
  tags_.clear();
  tag_data_.clear();
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

void FrameBuffers::AddTag(uint32_t index) {
  tags_.emplace_back();
  wire::EncodeFixed32(tags_.back().data(), index);
  tag_data_.push_back(data_.size());
}

const std::vector<asio::const_buffer>& FrameBuffers::Finish() {
  const uint64_t tag_bytes = tags_.size() * wire::kTagBytes;
  wire::EncodeFramePrefix(type_, request_id_, meta_, data_bytes_ + tag_bytes,
                          &prefix_, tagged() ? wire::kFrameTagged : 0);
  buffers_.clear();
  buffer_marks_.clear();
  group_buffers_.clear();
  buffers_.emplace_back(prefix_.data(), prefix_.size());
  buffer_marks_.push_back(0);
  size_t g = 0;
  for (size_t i = 0; i <= data_.size(); ++i) {
    // Tags (several, where a group is empty) before data_[i].
    for (; g < tags_.size() && tag_data_[g] == i; ++g) {
      group_buffers_.push_back(buffers_.size());
      buffers_.emplace_back(tags_[g].data(), tags_[g].size());
      buffer_marks_.push_back(0);
    }
    if (i < data_.size()) {
      buffers_.push_back(data_[i]);
      buffer_marks_.push_back(marks_[i]);
    }
  }
  return buffers_;
}

}  // namespace pstrain::net
