#include "ps/rules/step_sums.h"

#include <algorithm>
#include <cstring>

#include <ATen/ATen.h>

#include "util/check.h"

namespace pstrain::ps {

namespace {

// A value's bits, and those of its exponent: a float or double is NaN or Inf
// exactly when its exponent bits are all ones. int64 (a buffer's count)
// has no such values: its mask is 0 and never matches.
template <typename T>
struct Bits;
template <>
struct Bits<float> {
  using Type = uint32_t;
  static constexpr Type kExponent = 0x7f800000u;
};
template <>
struct Bits<double> {
  using Type = uint64_t;
  static constexpr Type kExponent = 0x7ff0000000000000u;
};
template <>
struct Bits<int64_t> {
  using Type = uint64_t;
  static constexpr Type kExponent = 0;
};

// Element i of `src`, loaded once as bits: `src` may lie anywhere in a
// shared-memory ring, unaligned for T, and memcpy is the defined way to
// load from there (compilers make it one unaligned load).
template <typename T>
typename Bits<T>::Type LoadBits(const char* src, uint64_t i) {
  typename Bits<T>::Type b;
  std::memcpy(&b, src + i * sizeof(T), sizeof(T));
  return b;
}

template <typename T>
T FromBits(typename Bits<T>::Type b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

// One pass over a piece, each element of `data` read once: its finite check
// and its sum see the same value, even if a peer sharing the memory writes
// it meanwhile. The step's first addend copies (no zeroing pass), a middle
// one adds, the last one adds and divides by the count (no separate
// averaging pass). The sums are the same as zero + g1 + g2 + ... then / n.
// Returns whether every element was finite. The finite test is on the bits,
// with no early exit, so that the loop vectorizes.
template <typename T>
bool Reduce(void* acc, const void* data, uint64_t n, int arrival, int count) {
  using B = Bits<T>;
  T* dst = static_cast<T*>(acc);
  const char* src = static_cast<const char*>(data);
  typename B::Type bad = 0;
  const auto next = [&](uint64_t i) {
    const typename B::Type b = LoadBits<T>(src, i);
    bad |= B::kExponent != 0 && (b & B::kExponent) == B::kExponent;
    return FromBits<T>(b);
  };
  if (arrival == 0 && count == 1) {
    for (uint64_t i = 0; i < n; ++i)
      dst[i] = (T(0) + next(i)) / T(count);
  } else if (arrival == 0) {
    for (uint64_t i = 0; i < n; ++i)
      dst[i] = T(0) + next(i);
  } else if (arrival + 1 < count) {
    for (uint64_t i = 0; i < n; ++i)
      dst[i] += next(i);
  } else {
    for (uint64_t i = 0; i < n; ++i)
      dst[i] = (dst[i] + next(i)) / T(count);
  }
  return bad == 0;
}

template <typename T>
void Divide(void* acc, uint64_t n, int count) {
  T* dst = static_cast<T*>(acc);
  for (uint64_t i = 0; i < n; ++i)
    dst[i] /= T(count);
}

}  // namespace

StepSums::StepSums(const std::vector<at::Tensor>& params, int num_workers) {
  size_t pieces = 0;
  for (const auto& p : params) {
    sums_.push_back(at::zeros_like(p));
    base_.push_back(pieces);
    pieces += (p.nbytes() + kPieceBytes - 1) / kPieceBytes;
  }
  arrivals_.assign(pieces, 0);
  extra_.assign(pieces, 0);
  contributed_.assign(num_workers, std::vector<bool>(pieces, false));
}

bool StepSums::Add(int w, int key, uint64_t offset, const void* data,
                   uint64_t bytes, int needed) {
  at::Tensor& acc = sums_.at(key);
  const size_t esize = acc.element_size();
  PS_CHECK(offset % esize == 0 && bytes % esize == 0 &&
           offset + bytes <= acc.nbytes())
      << "bad piece " << offset << "+" << bytes << " of key " << key;
  PS_CHECK(offset % kPieceBytes == 0 &&
           bytes == std::min<uint64_t>(kPieceBytes, acc.nbytes() - offset))
      << "pieces must be whole: " << offset << "+" << bytes;
  const size_t piece = Piece(key, offset);
  uint16_t& arrivals = arrivals_[piece];
  const int count = needed + extra_[piece];
  char* base = static_cast<char*>(acc.data_ptr()) + offset;
  bool finite;
  if (acc.scalar_type() == at::kFloat) {
    finite = Reduce<float>(base, data, bytes / esize, arrivals, count);
  } else if (acc.scalar_type() == at::kDouble) {
    finite = Reduce<double>(base, data, bytes / esize, arrivals, count);
  } else {
    finite = Reduce<int64_t>(base, data, bytes / esize, arrivals, count);
  }
  // A piece with NaN or Inf does not count as added: its step is discarded
  // (its sum holds the bad values, and a first addend's copy is overwritten
  // by the next first addend).
  if (!finite)
    return false;
  ++arrivals;
  contributed_[w][piece] = true;
  return true;
}

// Add's sums in three passes: the pieces no one has added yet start at
// zero, the record is added (for topk only its k elements), and the pieces
// whose last addend this was are divided.
void StepSums::AddRecord(int w, int key, wire::Codec codec,
                         const wire::CodecParams& params, const uint8_t* data,
                         uint64_t nbytes, int needed) {
  at::Tensor& acc = sums_.at(key);
  PS_CHECK(acc.scalar_type() == at::kFloat) << "key " << key << " not float";
  float* base = acc.data_ptr<float>();
  const uint64_t total = acc.nbytes();
  constexpr uint64_t kPieceFloats = kPieceBytes / sizeof(float);
  for (uint64_t off = 0; off < total; off += kPieceBytes) {
    if (arrivals_[Piece(key, off)] == 0) {
      std::memset(reinterpret_cast<char*>(base) + off, 0,
                  std::min(kPieceBytes, total - off));
    }
  }
  wire::DecodeAdd(codec, params, data, nbytes, static_cast<size_t>(acc.numel()),
                  1.0f, base);
  for (uint64_t off = 0; off < total; off += kPieceBytes) {
    const size_t piece = Piece(key, off);
    PS_CHECK(!contributed_[w][piece]) << "key " << key << " added twice";
    const int count = needed + extra_[piece];
    if (++arrivals_[piece] == count) {
      float* p = base + off / sizeof(float);
      const uint64_t n = std::min(kPieceFloats, (total - off) / sizeof(float));
      for (uint64_t i = 0; i < n; ++i)
        p[i] /= static_cast<float>(count);
    }
    contributed_[w][piece] = true;
  }
}

bool StepSums::Final(int key, int needed) const {
  const uint64_t nbytes = sums_[key].nbytes();
  const size_t first = base_[key];
  const size_t end = first + (nbytes + kPieceBytes - 1) / kPieceBytes;
  for (size_t p = first; p < end; ++p) {
    if (arrivals_[p] == 0 || arrivals_[p] != needed + extra_[p])
      return false;
  }
  return true;
}

void StepSums::Remove(int w, int needed) {
  for (size_t k = 0; k < sums_.size(); ++k) {
    at::Tensor& acc = sums_[k];
    const uint64_t nbytes = acc.nbytes();
    for (uint64_t off = 0; off < nbytes; off += kPieceBytes) {
      const size_t piece = Piece(static_cast<int>(k), off);
      if (contributed_[w][piece]) {
        ++extra_[piece];
        continue;
      }
      const int arrivals = arrivals_[piece];
      if (arrivals == 0 || arrivals != needed + extra_[piece])
        continue;
      char* base = static_cast<char*>(acc.data_ptr()) + off;
      const uint64_t n =
          std::min(kPieceBytes, nbytes - off) / acc.element_size();
      if (acc.scalar_type() == at::kFloat) {
        Divide<float>(base, n, arrivals);
      } else if (acc.scalar_type() == at::kDouble) {
        Divide<double>(base, n, arrivals);
      } else {
        Divide<int64_t>(base, n, arrivals);
      }
    }
  }
}

void StepSums::Clear() {
  std::fill(arrivals_.begin(), arrivals_.end(), 0);
  std::fill(extra_.begin(), extra_.end(), 0);
  for (auto& c : contributed_)
    std::fill(c.begin(), c.end(), false);
}

}  // namespace pstrain::ps
