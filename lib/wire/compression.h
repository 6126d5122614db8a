#pragma once
// Gradient compression: a float32 tensor of n elements coded as
// one of the Codec values of wire/tensor_desc.h, and the checks a receiver
// makes before it adds a compressed push into an accumulator. Raw float
// arrays in and bytes out: no torch. Error feedback, which makes the lossy
// codecs converge, is wire/error_feedback.h. share/doc/wire-format.md
// ("Compressed tensors") has the same layouts with worked examples; change
// both together.
//
// Layouts (little-endian; f32 is an IEEE float32, i8 two's complement;
// C = ceil(n / chunk) chunks, chunk c covering elements
// [c * chunk, min((c + 1) * chunk, n)), the last one possibly shorter):
//
//   raw     f32 x[n]                                  4n bytes
//   fp16    u16 half[n]                               2n bytes
//   bf16    u16 bfloat16[n]                           2n bytes
//   int8    f32 scale[C], i8 q[n]                     4C + n bytes
//   topk    u32 index[k], f32 value[k]                8k bytes
//   onebit  f32 scale[C], u8 sign_bits[ceil(n / 8)]   4C + ceil(n / 8) bytes
//
// Scales come first so that a receiver checks them all in one pass before
// any element, and the elements stay one contiguous run. The size depends
// only on (codec, n, params), never on the data, so a receiver knows how
// many bytes to expect from the descriptor alone.
//
// Functions are pure and thread-safe; Encode allocates only for topk.

#include <cstddef>
#include <cstdint>

#include "util/status.h"
#include "wire/tensor_desc.h"

namespace pstrain::wire {

/// The codecs' knobs. They are not on the wire: rank 0 decides them once in
/// the job spec, so both ends of every push use the same.
struct CodecParams {
  /// int8 and onebit: elements per chunk, each chunk with its own float32
  /// scale. Smaller chunks follow the data more closely and cost 4 bytes
  /// each. Default: 256 (the --compress_chunk flag). REQUIRES: >= 1.
  uint32_t chunk = 256;
  /// topk: the fraction R of the elements kept (see TopKCount).
  /// Default: 0.01. REQUIRES: 0 < ratio <= 1.
  double ratio = 0.01;
};

/// The most elements one compressed tensor may have, 2^32: what topk's u32
/// indices address. A 4 GiB frame holds at most 2^30 float32s anyway.
inline constexpr size_t kMaxCompressedElements = size_t{1} << 32;

/// kInvalidArgument naming the field unless `codec` is a Codec and the
/// params it reads are in range: chunk >= 1 (int8, onebit), 0 < ratio <= 1
/// (topk). Run it on the job spec; the functions below require it.
Status CheckCodecParams(Codec codec, const CodecParams& params);

/// topk's k for n elements: max(1, ceil(ratio * n)), at most n (0 for n = 0).
/// The product is a double; one within 1e-9 (relative) of an integer counts
/// as that integer, so that 0.07 * 100, which is 7.000000000000001 in
/// double, keeps 7 and not 8. Both ends compute k with this one function.
size_t TopKCount(double ratio, size_t n);

/// The exact encoded size in bytes of n elements (the table above).
/// REQUIRES: CheckCodecParams ok, n <= kMaxCompressedElements.
size_t CompressedBytes(Codec codec, const CodecParams& params, size_t n);

/// splitmix64's increment (the golden ratio in 64 bits) and output function
/// (Steele, Lea, Flood, "Fast Splittable Pseudorandom Number Generators",
/// OOPSLA 2014): int8's draws below, and how a sender derives each
/// record's `seed` from its own.
inline constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ULL;
inline uint64_t SplitMix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Encodes x[0..n) to out[0..CompressedBytes) and returns that size.
/// - raw: the floats as they are.
/// - fp16, bf16: each element rounded to the nearest, ties to even
///   (wire/float16.h). A finite x beyond the format's range becomes the
///   largest finite value of its sign rather than infinity, which the
///   receiver would refuse; error feedback carries the rest.
/// - int8: QSGD (Alistarh et al., "QSGD: Communication-Efficient SGD via
///   Gradient Quantization and Encoding", NIPS 2017, section 3) with s = 127
///   levels and the chunk's max |x| as its scale: q = y rounded down or up
///   at random, up with probability y - floor(y), where y = x / scale * 127;
///   so E[q * scale / 127] = x. A chunk of zeros has scale 0 and q = 0.
///   The draw for element i is u_i = (splitmix64 output i >> 40) / 2^24,
///   in [0, 1), with splitmix64 (Steele et al., OOPSLA 2014) seeded with
///   `seed` and counted from 0: output i is Mix(seed + (i + 1) * 0x9E37
///   79B97F4A7C15). It rounds up iff u_i < y - floor(y). The same seed
///   gives the same bytes; each element's draw depends only on (seed, i).
/// - topk: the k = TopKCount(ratio, n) elements of largest |x|, ties to the
///   lower index, as strictly increasing u32 indices and then their float32
///   values: top-k sparsification as in Stich et al., "Sparsified SGD with
///   Memory", NeurIPS 2018, section 2, and Lin et al., "Deep Gradient
///   Compression", ICLR 2018, section 3.1. Selection by std::nth_element
///   (O(n)), then a sort of the k indices; a NaN counts as the largest.
/// - onebit: scaled sign, as in Karimireddy et al., "Error Feedback Fixes
///   SignSGD and other Gradient Compression Schemes", ICML 2019, section 3
///   (C(x) = ||x||_1 / d * sign(x)), per chunk: scale = the chunk's mean
///   |x|, and bit i of sign_bits[j], LSB first, for element 8j + i, set iff
///   x < 0 (so +0, -0 and NaN send +scale). Padding bits are 0.
/// `seed` is read by int8 only. A NaN or infinite x gives a record that
/// Validate refuses (a non-finite value or scale), never one that decodes
/// to something else. REQUIRES: CheckCodecParams ok, n <=
/// kMaxCompressedElements, out has room for CompressedBytes(codec, params,
/// n) bytes and does not overlap x.
size_t Encode(Codec codec, const CodecParams& params, const float* x, size_t n,
              uint64_t seed, uint8_t* out);

/// acc[i] += alpha * decoded[i] for i in [0, n), decoding in[0..nbytes)
/// element by element, with no decoded copy: a server decodes each push
/// straight into the step's accumulator. For topk only the k named elements
/// of acc change. Decoded values: raw x; fp16, bf16 the value of the code;
/// int8 q * (scale / 127); topk value at index, 0 elsewhere; onebit -scale
/// if the bit is set, else +scale. int8 folds alpha into the chunk's step
/// (one multiply per element), so for alpha other than +-1 a term may
/// differ from alpha * decoded in its last bit; for alpha = -1 it is
/// exactly -decoded (error feedback relies on it). acc is float32 [n].
/// REQUIRES: Validate(codec, params, in, nbytes, n) is ok (nbytes is
/// checked again, the content is not); acc does not overlap in.
void DecodeAdd(Codec codec, const CodecParams& params, const uint8_t* in,
               size_t nbytes, size_t n, float alpha, float* acc);

/// Decodes a record of a per-element codec (raw, fp16, bf16) in place: its
/// CompressedBytes(codec, params, n) bytes at the front of buf[0..4n)
/// become the float32 elements x[0..n) in all of buf (little-endian, as
/// raw data is), each the value DecodeAdd would add, -0 kept. A receiver
/// reads rows (ps/engine/push_reader.cc, worker/params_reply.cc) and pulled
/// parameters (worker/ps_client.cc) into the float32 buffer they are used
/// from, so this needs no second buffer. It
/// runs back to front: element i's 4 bytes cover codes 2i and 2i + 1,
/// which are read by then. raw is a no-op.
/// REQUIRES: codec is raw, fp16 or bf16; Validate ok on the record; buf
/// holds 4n bytes.
void DecodeInPlace(Codec codec, uint8_t* buf, size_t n);

/// Checks a record from a peer before DecodeAdd may read it. kCorruption
/// with a one-line message, prefixed by the codec's name, for:
/// - an unknown codec, or n above kMaxCompressedElements;
/// - a wrong length: "fp16: 6 bytes for 4 elements, expected 8";
/// - topk: "index 7 at 1 is out of range: the tensor has 4 elements",
///   "index 3 at 2 is repeated: the index before it is the same",
///   "index 1 at 2 is out of order: below 3 before it (indices must
///   ascend)";
/// - int8, onebit: "scale of chunk 1 is inf, expected a finite value" (NaN
///   or +-Inf), "scale of chunk 1 is -2, expected >= 0";
/// - fp16, bf16, topk: "value at 2 is nan, expected a finite value";
/// - int8: "value -128 at 3 is out of range, expected -127..127";
/// - onebit: "padding bits 0xf0 of the last byte are set, expected 0".
/// The last two are never sent by Encode: refusing them keeps one set of
/// bytes per decoded tensor. raw is checked for length only, as the raw
/// descriptor's data always was. REQUIRES: CheckCodecParams ok.
/// Allocates only to build a message.
Status Validate(Codec codec, const CodecParams& params, const uint8_t* in,
                size_t nbytes, size_t n);

}  // namespace pstrain::wire
