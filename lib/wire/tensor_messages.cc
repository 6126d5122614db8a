// The codecs of the messages about parameters: pull, push_pull and push
// (one codec, GradientsMsg), params, shard and snapshot, with their sparse
// rows and row requests; and the walk over descriptors that ValidateFrame
// runs on the hot path (module and push_batch, whose metas are of other
// shapes, have their own in module_messages.cc and batch_messages.cc).
// Layouts: messages.h.

#include <string>

#include "util/check.h"
#include "wire/messages.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {
namespace {

using internal::MetaReader;
using internal::MetaWriter;

// Smallest encoding of a TensorDesc (rank 0), so that a count the remaining
// bytes cannot hold is refused before anything is allocated for it.
constexpr size_t kMinDescBytes = 15;

void EncodeIds(const std::vector<int64_t>& ids, MetaWriter* w) {
  for (int64_t id : ids)
    w->I64(id);
}

void EncodeRows(const std::vector<SparseRows>& rows, MetaWriter* w) {
  PS_CHECK(rows.size() <= kMaxTensorsPerMessage)
      << rows.size() << " sparse records in one message";
  w->U32(static_cast<uint32_t>(rows.size()));
  for (const SparseRows& r : rows) {
    PS_CHECK(r.rows.ndim == 2 &&
             r.rows.dims[0] == static_cast<int64_t>(r.ids.size()) &&
             r.ids.size() <= kMaxRowIds)
        << "sparse rows of key " << r.rows.key << ": " << r.ids.size()
        << " ids for dims[0] " << r.rows.dims[0];
    w->Desc(r.rows);
    EncodeIds(r.ids, w);
  }
}

void EncodeDescs(uint64_t version, const std::vector<TensorDesc>& descs,
                 std::string* meta) {
  PS_CHECK(descs.size() <= kMaxTensorsPerMessage)
      << descs.size() << " tensors in one message";
  meta->clear();
  MetaWriter w(meta);
  w.U64(version);
  w.U32(static_cast<uint32_t>(descs.size()));
  for (const TensorDesc& d : descs)
    w.Desc(d);
}

// What ReadTensorMeta hands each field to: the decoders store, the
// validator only sums the data bytes. Both read through ReadTensorMeta, so
// both check the same.
class TensorMetaSink {
 public:
  virtual ~TensorMetaSink() = default;
  virtual Status Dense(const TensorDesc& desc) = 0;
  /// The count of SparseRows, then each one's descriptor before its ids.
  virtual void RowsCount(uint32_t) {}
  virtual Status Rows(uint32_t i, const TensorDesc& desc) = 0;
  virtual void RowId(uint32_t, int64_t) {}
  virtual void RequestsCount(uint32_t) {}
  virtual void Request(uint32_t, uint32_t /*key*/) {}
  virtual void RequestId(uint32_t, int64_t) {}
  virtual void Member(uint32_t) {}
  virtual void Stop(bool) {}
};

// Reads `n` row ids, each >= 0 and strictly above the one before it,
// handing each to sink(id). The three ways to break that have errors of
// their own.
template <typename Sink>
Status ReadIds(MetaReader& r, uint64_t n, Sink&& sink) {
  if (n > kMaxRowIds) {
    return r.Error(std::to_string(n) + " row ids exceed max " +
                   std::to_string(kMaxRowIds));
  }
  if (n * 8 > r.left()) {
    return r.Error(std::to_string(n) + " row ids need " +
                   std::to_string(n * 8) + " bytes, " +
                   std::to_string(r.left()) + " left");
  }
  int64_t prev = -1;
  for (uint64_t j = 0; j < n; ++j) {
    int64_t id = 0;
    PS_RETURN_IF_ERROR(r.I64("row id", &id));
    const std::string at =
        "row id " + std::to_string(id) + " at " + std::to_string(j);
    if (id < 0)
      return r.Error(at + " is negative");
    if (j > 0 && id == prev)
      return r.Error(at + " is duplicated: the id before it is the same");
    if (j > 0 && id < prev) {
      return r.Error(at + " is out of order: below " + std::to_string(prev) +
                     " before it (ids must ascend)");
    }
    sink(id);
    prev = id;
  }
  return Status::Ok();
}

Status ReadSparseRows(MetaReader& r, TensorMetaSink& sink) {
  uint32_t count = 0;
  PS_RETURN_IF_ERROR(r.Count(kMinDescBytes, &count));
  sink.RowsCount(count);
  TensorDesc desc;
  return r.Items("rows", count, [&](uint32_t i) {
    PS_RETURN_IF_ERROR(r.Desc(&desc));
    if (desc.ndim != 2) {
      return r.Error("ndim " + std::to_string(desc.ndim) +
                     ", expected 2 ([rows, row_dim])");
    }
    PS_RETURN_IF_ERROR(r.Wrap(sink.Rows(i, desc)));
    return ReadIds(r, static_cast<uint64_t>(desc.dims[0]),
                   [&](int64_t id) { sink.RowId(i, id); });
  });
}

Status ReadRequests(MetaReader& r, MsgType type, TensorMetaSink& sink) {
  uint32_t count = 0;
  PS_RETURN_IF_ERROR(r.Count(8, &count));  // u32 key, u32 n
  if (type == MsgType::kPush && count != 0) {
    return r.Error(std::to_string(count) +
                   " row requests, expected 0 (only push_pull asks for rows)");
  }
  sink.RequestsCount(count);
  return r.Items("request", count, [&](uint32_t i) {
    uint32_t key = 0;
    uint32_t n = 0;
    PS_RETURN_IF_ERROR(r.U32("key", &key));
    PS_RETURN_IF_ERROR(r.U32("count", &n));
    sink.Request(i, key);
    return ReadIds(r, n, [&](int64_t id) { sink.RequestId(i, id); });
  });
}

// Reads "u64 version, u32 count, count x TensorDesc"; push, push_pull and
// params then carry their SparseRows; push and push_pull their requests;
// params "u32 count, count x u32 member" and "u8 flags" (kParamsStop).
Status ReadTensorMeta(std::string_view meta, MsgType type, uint64_t* version,
                      TensorMetaSink& sink) {
  MetaReader r(meta, MsgTypeName(type));
  uint32_t count = 0;
  PS_RETURN_IF_ERROR(r.U64("version", version));
  PS_RETURN_IF_ERROR(r.Count(kMinDescBytes, &count));
  TensorDesc desc;
  PS_RETURN_IF_ERROR(r.Items("tensor", count, [&](uint32_t) {
    PS_RETURN_IF_ERROR(r.Desc(&desc));
    return r.Wrap(sink.Dense(desc));
  }));
  if (type == MsgType::kShard || type == MsgType::kStepRecord)
    return r.Finish();
  PS_RETURN_IF_ERROR(ReadSparseRows(r, sink));
  if (type != MsgType::kParams) {
    PS_RETURN_IF_ERROR(ReadRequests(r, type, sink));
    return r.Finish();
  }
  PS_RETURN_IF_ERROR(r.Count(4, &count));
  PS_RETURN_IF_ERROR(r.Items("member", count, [&](uint32_t) {
    uint32_t worker = 0;
    PS_RETURN_IF_ERROR(r.U32("worker", &worker));
    sink.Member(worker);
    return Status::Ok();
  }));
  uint8_t flags = 0;
  PS_RETURN_IF_ERROR(r.U8("flags", &flags));
  if ((flags & ~kParamsStop) != 0) {
    return r.Error("flags " + std::to_string(flags) +
                   " has unknown bits, expected 0 or " +
                   std::to_string(kParamsStop));
  }
  sink.Stop((flags & kParamsStop) != 0);
  return r.Finish();
}

// Stores what it is handed, reusing the capacity of every vector (the
// SparseRows' id vectors too): steady state allocates nothing.
class DecodeSink : public TensorMetaSink {
 public:
  DecodeSink(std::vector<TensorDesc>* dense, std::vector<SparseRows>* rows,
             std::vector<RowRequest>* requests)
      : dense_(dense), rows_(rows), requests_(requests) {
    dense_->clear();  // rows_ and requests_ are resized to their counts
  }
  Status Dense(const TensorDesc& desc) override {
    dense_->push_back(desc);
    return Status::Ok();
  }
  void RowsCount(uint32_t n) override { rows_->resize(n); }
  Status Rows(uint32_t i, const TensorDesc& desc) override {
    (*rows_)[i].rows = desc;
    (*rows_)[i].ids.clear();
    return Status::Ok();
  }
  void RowId(uint32_t i, int64_t id) override { (*rows_)[i].ids.push_back(id); }
  void RequestsCount(uint32_t n) override { requests_->resize(n); }
  void Request(uint32_t i, uint32_t key) override {
    (*requests_)[i].key = key;
    (*requests_)[i].ids.clear();
  }
  void RequestId(uint32_t i, int64_t id) override {
    (*requests_)[i].ids.push_back(id);
  }

 private:
  std::vector<TensorDesc>* dense_;
  std::vector<SparseRows>* rows_;
  std::vector<RowRequest>* requests_;
};

// PushPull and Push: one codec for the layout they share.
template <MsgType kType>
void EncodeGradients(const GradientsMsg<kType>& m, std::string* meta) {
  PS_CHECK(kType == MsgType::kPushPull || m.requests.empty())
      << "a push carries no row requests";
  PS_CHECK(m.requests.size() <= kMaxTensorsPerMessage)
      << m.requests.size() << " row requests in one message";
  EncodeDescs(m.version, m.grads, meta);
  MetaWriter w(meta);
  EncodeRows(m.rows, &w);
  w.U32(static_cast<uint32_t>(m.requests.size()));
  for (const RowRequest& q : m.requests) {
    PS_CHECK(q.ids.size() <= kMaxRowIds) << q.ids.size() << " row ids";
    w.U32(q.key);
    w.U32(static_cast<uint32_t>(q.ids.size()));
    EncodeIds(q.ids, &w);
  }
}

template <MsgType kType>
Status DecodeGradients(std::string_view meta, GradientsMsg<kType>* out) {
  DecodeSink sink(&out->grads, &out->rows, &out->requests);
  return ReadTensorMeta(meta, kType, &out->version, sink);
}

}  // namespace

namespace internal {

// Walks the descriptors without storing them, so validating a hot-path
// frame allocates nothing.
Status ValidateTensorMeta(std::string_view meta, MsgType type,
                          uint64_t data_bytes, bool tagged) {
  if (type == MsgType::kModule)
    return ValidateModuleMeta(meta, data_bytes);
  if (type == MsgType::kPushBatch)
    return ValidateBatchMeta(meta, data_bytes);
  // Sums nbytes as it goes, so that a descriptor the data cannot hold is
  // refused at once.
  class SumSink : public TensorMetaSink {
   public:
    SumSink(uint64_t left, uint64_t tag) : left_(left), tag_(tag) {}
    Status Dense(const TensorDesc& d) override { return Take(d); }
    Status Rows(uint32_t, const TensorDesc& d) override { return Take(d); }
    uint64_t left() const { return left_; }

   private:
    Status Take(const TensorDesc& d) {
      if (tag_ > left_ || d.nbytes > left_ - tag_) {
        return Corruption("nbytes " + std::to_string(d.nbytes) +
                          (tag_ ? " and its tag exceed" : " exceeds") +
                          " the " + std::to_string(left_) + " data bytes left");
      }
      left_ -= tag_ + d.nbytes;
      return Status::Ok();
    }
    uint64_t left_;
    const uint64_t tag_;
  };
  uint64_t version = 0;
  SumSink sink(data_bytes, tagged ? kTagBytes : 0);
  PS_RETURN_IF_ERROR(ReadTensorMeta(meta, type, &version, sink));
  const uint64_t left = sink.left();
  if (left == 0)
    return Status::Ok();
  return Corruption(std::string(MsgTypeName(type)) + ": data section is " +
                    std::to_string(data_bytes) + " bytes, descriptors" +
                    (tagged ? " and their tags" : "") + " say " +
                    std::to_string(data_bytes - left));
}

}  // namespace internal

void EncodeMeta(const Pull& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).U64(m.min_version);
}

Status DecodeMeta(std::string_view meta, Pull* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  PS_RETURN_IF_ERROR(r.U64("min_version", &out->min_version));
  return r.Finish();
}

void EncodeMeta(const PushPull& m, std::string* meta) {
  EncodeGradients(m, meta);
}

Status DecodeMeta(std::string_view meta, PushPull* out) {
  return DecodeGradients(meta, out);
}

void EncodeMeta(const Push& m, std::string* meta) {
  EncodeGradients(m, meta);
}

Status DecodeMeta(std::string_view meta, Push* out) {
  return DecodeGradients(meta, out);
}

void EncodeMeta(const Params& m, std::string* meta) {
  PS_CHECK(m.members.size() <= kMaxTensorsPerMessage)
      << m.members.size() << " members in one message";
  EncodeDescs(m.version, m.params, meta);
  MetaWriter w(meta);
  EncodeRows(m.rows, &w);
  w.U32(static_cast<uint32_t>(m.members.size()));
  for (uint32_t worker : m.members)
    w.U32(worker);
  w.U8(m.stop ? kParamsStop : 0);
}

Status DecodeMeta(std::string_view meta, Params* out) {
  class ParamsSink : public DecodeSink {
   public:
    explicit ParamsSink(Params* out)
        : DecodeSink(&out->params, &out->rows, nullptr), out_(out) {
      out_->members.clear();
    }
    void Member(uint32_t worker) override { out_->members.push_back(worker); }
    void Stop(bool stop) override { out_->stop = stop; }

   private:
    Params* out_;
  };
  ParamsSink sink(out);  // keeps capacity: steady state allocates nothing
  return ReadTensorMeta(meta, TypeOf(*out), &out->version, sink);
}

// Shard and StepRecord: "u64 version, u32 count, count x TensorDesc".
template <typename M>
Status DecodeVersionedDescs(std::string_view meta, M* out) {
  std::vector<SparseRows> none;
  DecodeSink sink(&out->params, &none, nullptr);
  return ReadTensorMeta(meta, TypeOf(*out), &out->version, sink);
}

void EncodeMeta(const Shard& m, std::string* meta) {
  EncodeDescs(m.version, m.params, meta);
}

Status DecodeMeta(std::string_view meta, Shard* out) {
  return DecodeVersionedDescs(meta, out);
}

void EncodeMeta(const StepRecord& m, std::string* meta) {
  EncodeDescs(m.version, m.params, meta);
}

Status DecodeMeta(std::string_view meta, StepRecord* out) {
  return DecodeVersionedDescs(meta, out);
}

void EncodeMeta(const Snapshot& m, std::string* meta) {
  meta->clear();
  MetaWriter w(meta);
  w.U64(m.min_version);
  w.U8((m.with_optimizer_state ? kSnapshotOptimizerState : 0) |
       (m.standby ? kSnapshotStandby : 0) | (m.replay ? kSnapshotReplay : 0));
}

Status DecodeMeta(std::string_view meta, Snapshot* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  uint8_t flags = 0;
  PS_RETURN_IF_ERROR(r.U64("min_version", &out->min_version));
  PS_RETURN_IF_ERROR(r.U8("flags", &flags));
  constexpr uint8_t kKnown =
      kSnapshotOptimizerState | kSnapshotStandby | kSnapshotReplay;
  if ((flags & ~kKnown) != 0) {
    return r.Error("flags " + std::to_string(flags) +
                   " has unknown bits, expected 0.." + std::to_string(kKnown));
  }
  out->with_optimizer_state = (flags & kSnapshotOptimizerState) != 0;
  out->standby = (flags & kSnapshotStandby) != 0;
  out->replay = (flags & kSnapshotReplay) != 0;
  if (out->replay && !out->standby)
    return r.Error("flag replay without standby");
  return r.Finish();
}

}  // namespace pstrain::wire
