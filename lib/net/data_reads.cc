#include "net/data_reads.h"

namespace pstrain::net {

Status DataReads::Start(const wire::FrameHeader& header, uint64_t data_bytes,
                        const std::vector<asio::mutable_buffer>& dst) {
  tagged_ = (header.flags & wire::kFrameTagged) != 0;
  if (!tagged_)
    first_.clear();
  else if (first_.empty())
    return Corruption(std::string(wire::MsgTypeName(header.type)) +
                      ": tagged, but read here in the order of its meta");
  buffers_ = dst.size();
  sizes_.clear();
  if (in_place_up_to_ > 0) {  // only in-place reads look at the sizes
    for (const auto& b : dst)
      sizes_.push_back(b.size());
  }
  next_ = 0;
  end_ = tagged_ ? 0 : buffers_;
  in_.assign(first_.size(), false);
  left_ = first_.size();
  uint64_t total = first_.size() * wire::kTagBytes;
  for (const auto& b : dst)
    total += b.size();
  if (total == data_bytes)
    return Status::Ok();
  return Corruption("frame data is " + std::to_string(data_bytes) +
                    " bytes, the buffers for it " + std::to_string(total));
}

DataReads::Step DataReads::Next() const {
  if (next_ < end_ && piecewise_) {
    const bool in_place = in_place_up_to_ > 0 && sizes_[next_] > 0 &&
                          sizes_[next_] <= in_place_up_to_;
    return {in_place ? Step::kInPlace : Step::kBuffers, next_, next_ + 1};
  }
  if (next_ < end_)
    return {Step::kBuffers, next_, end_};
  if (tagged_ && left_ > 0)
    return {Step::kTag};
  return {};
}

Status DataReads::Take(const std::string& what) {
  const uint32_t g = wire::DecodeFixed32(tag_);
  if (g >= first_.size()) {
    return Corruption(what + ": tag " + std::to_string(g) +
                      " names no descriptor, expected below " +
                      std::to_string(first_.size()));
  }
  if (in_[g]) {
    return Corruption(what + ": tag " + std::to_string(g) +
                      " comes twice, expected each descriptor once");
  }
  in_[g] = true;
  --left_;
  next_ = first_[g];
  end_ = g + 1 < first_.size() ? first_[g + 1] : buffers_;
  return Status::Ok();
}

}  // namespace pstrain::net
