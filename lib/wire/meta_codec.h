#pragma once
// Internal to lib/wire: the one bounds-checked reader and the one appending
// writer that every message codec (*_messages.cc) is built from, plus the
// dtype and shape checks that tensor descriptors and model fingerprints
// share. One reader is what keeps codecs from drifting apart (ps-lite's two
// packers did). Other layers include messages.h, never this file.
// MetaReader and MetaWriter are thread-compatible value types.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"
#include "wire/frame.h"
#include "wire/tensor_desc.h"

namespace pstrain::wire::internal {

/// kCorruption "dtype 9 is unknown, expected 1..8" unless `v` is a DType.
Status CheckDType(uint8_t v);
/// kCorruption "ndim 9 exceeds 8" unless ndim <= kMaxTensorRank.
Status CheckRank(uint8_t ndim);
/// kCorruption unless every dims[i] >= 0 and the product of max(dim, 1)
/// fits in int64. Zero dims count as 1 so that a shape like [0, 2^62, 2^62]
/// is refused too: its strides would overflow whoever builds the tensor.
Status CheckDims(const int64_t* dims, size_t ndim);
/// kCorruption unless meta_len <= kMaxMetaBytes and 4 + meta_len <=
/// header.body_len.
Status CheckMetaLength(const FrameHeader& header, uint64_t meta_len);
/// ValidateFrame for a DataSection::kTensors message (tensor_messages.cc):
/// walks `meta`'s descriptors, checked as DecodeMeta checks them, without
/// storing them, and refuses unless their nbytes add up to `data_bytes`
/// (`tagged`: each plus kTagBytes, frame.h's kFrameTagged). Allocates
/// nothing unless it fails, but for a module (its sha256).
Status ValidateTensorMeta(std::string_view meta, MsgType type,
                          uint64_t data_bytes, bool tagged);
/// ValidateTensorMeta for module (module_messages.cc): decodes `meta` as
/// DecodeMeta(ModuleMsg) does and refuses unless its descriptor's nbytes
/// is `data_bytes`.
Status ValidateModuleMeta(std::string_view meta, uint64_t data_bytes);
/// ValidateTensorMeta for push_batch (batch_messages.cc): decodes `meta` as
/// DecodeMeta(PushBatch) does, allocating nothing unless it fails, and
/// refuses unless x's and y's nbytes add up to `data_bytes`.
Status ValidateBatchMeta(std::string_view meta, uint64_t data_bytes);

/// Appends little-endian fields to a string; reusing one string keeps its
/// capacity. Sizes that the layout cannot express are programmer errors
/// (PS_CHECK), not Status: they come from our own structs.
class MetaWriter {
 public:
  /// `*out` must outlive this writer. Appends; does not clear.
  explicit MetaWriter(std::string* out) : out_(out) {}

  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U16(uint16_t v);
  void U32(uint32_t v);
  void U64(uint64_t v);
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  /// u32 length, then the bytes. REQUIRES: s.size() <= kMaxStringBytes.
  void Str(std::string_view s);
  /// A TensorDesc as tensor_desc.h lays it out. REQUIRES: ndim <= 8.
  void Desc(const TensorDesc& desc);

 private:
  std::string* out_;
};

/// Reads fields from the front of a meta section and refuses, with a
/// one-line kCorruption "<message>: [<item> <i>: ]<what>", any read that
/// would pass its end. Never reads out of bounds; on error the output
/// argument is unspecified.
class MetaReader {
 public:
  /// `message` (a MsgTypeName) prefixes every error and must outlive this
  /// reader; so must the bytes `in` views.
  MetaReader(std::string_view in, const char* message)
      : in_(in), message_(message) {}

  Status U8(const char* field, uint8_t* v);
  Status U16(const char* field, uint16_t* v);
  Status U32(const char* field, uint32_t* v);
  Status U64(const char* field, uint64_t* v);
  Status I64(const char* field, int64_t* v);
  /// u32 length + bytes into *out (reusing its capacity). The length is
  /// checked against kMaxStringBytes and the bytes left before *out grows.
  Status Str(const char* field, std::string* out);
  /// u32 count, checked against kMaxTensorsPerMessage and against the bytes
  /// left, given that each item takes at least `min_item_bytes`; so a
  /// count cannot make the caller allocate more than the input justifies.
  Status Count(size_t min_item_bytes, uint32_t* count);
  /// One TensorDesc (see DecodeTensorDesc).
  Status Desc(TensorDesc* desc);
  /// One TensorDesc, its errors naming `field`: "<message>: <field>: <what>".
  Status Desc(const char* field, TensorDesc* desc);
  /// Calls read_one(i) for i in [0, count); errors inside name "<item> <i>".
  template <typename ReadOne>
  Status Items(const char* item, uint32_t count, ReadOne&& read_one);
  /// Bytes not read yet.
  size_t left() const { return in_.size(); }
  /// kCorruption "<message>: N trailing bytes" unless all input was read.
  Status Finish() const;
  /// kCorruption "<message>: [<item> <i>: ]<what>".
  Status Error(const std::string& what) const;
  /// Ok stays Ok; an error from an unprefixed check gets this reader's
  /// prefix, keeping its message.
  Status Wrap(const Status& s) const;

 private:
  Status Need(const char* field, size_t n) const;

  std::string_view in_;
  const char* message_;
  const char* item_ = nullptr;  // set while Items() runs
  uint32_t index_ = 0;
};

template <typename ReadOne>
Status MetaReader::Items(const char* item, uint32_t count, ReadOne&& read_one) {
  for (uint32_t i = 0; i < count; ++i) {
    item_ = item;
    index_ = i;
    Status s = read_one(i);
    item_ = nullptr;
    if (!s.ok())
      return s;
  }
  return Status::Ok();
}

}  // namespace pstrain::wire::internal
