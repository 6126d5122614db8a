// Compressed pushes in streaming sync: a record is decoded straight into
// the step's accumulator, so memory stays flat in the number of
// workers whatever the codec.

#include <cstring>

#include "ps/parameter_server.h"
#include "util/check.h"

namespace pstrain::ps {

// Accumulate's sums, zero + g1 + g2 + ... then / count per piece, taken
// in three passes: the pieces no one has added yet start at zero, the
// record is added (for topk only its k elements), and the pieces whose
// last addend this was are divided.
void ParameterServer::AccumulateRecord(int w, int key, wire::Codec codec,
                                       const wire::CodecParams& params,
                                       const uint8_t* data, uint64_t nbytes) {
  at::Tensor& acc = accumulators_.at(key);
  PS_CHECK(acc.scalar_type() == at::kFloat) << "key " << key << " not float";
  float* base = acc.data_ptr<float>();
  const uint64_t total = acc.nbytes();
  constexpr uint64_t kPieceFloats = kPieceBytes / sizeof(float);
  for (uint64_t off = 0; off < total; off += kPieceBytes) {
    const size_t piece = pieces_.base[key] + off / kPieceBytes;
    if (pieces_.arrivals[piece] == 0) {
      std::memset(reinterpret_cast<char*>(base) + off, 0,
                  std::min(kPieceBytes, total - off));
    }
  }
  wire::DecodeAdd(codec, params, data, nbytes, static_cast<size_t>(acc.numel()),
                  1.0f, base);
  for (uint64_t off = 0; off < total; off += kPieceBytes) {
    const size_t piece = pieces_.base[key] + off / kPieceBytes;
    PS_CHECK(!pieces_.contributed[w][piece]) << "key " << key << " added twice";
    const int count = needed_ + pieces_.extra[piece];
    if (++pieces_.arrivals[piece] == count) {
      float* p = base + off / sizeof(float);
      const uint64_t n = std::min(kPieceFloats, (total - off) / sizeof(float));
      for (uint64_t i = 0; i < n; ++i)
        p[i] /= static_cast<float>(count);
    }
    pieces_.contributed[w][piece] = true;
  }
  step_started_ = true;
}

}  // namespace pstrain::ps
