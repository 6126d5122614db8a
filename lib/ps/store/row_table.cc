#include "ps/store/row_table.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

namespace pstrain::ps {

namespace {

constexpr uint32_t kEmpty = 0xffffffffu;
constexpr size_t kFirstIndex = 1024;  // a power of two

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

void CheckIds(const at::Tensor& ids, const char* what) {
  if (ids.scalar_type() != at::kLong || ids.dim() != 1 || !ids.is_cpu()) {
    throw std::invalid_argument(std::string(what) +
                                ": ids must be int64 [n] on the CPU");
  }
}

}  // namespace

RowTable::RowTable(const RowTableOptions& options)
    : options_(options), index_(kFirstIndex, kEmpty) {
  if (options.dim < 1)
    throw std::invalid_argument("RowTable: dim must be >= 1");
}

RowTable::~RowTable() = default;

uint64_t RowTable::bytes() const {
  const auto dim = static_cast<uint64_t>(options_.dim);
  const uint64_t per_chunk =
      kChunkRows *
      (sizeof(float) *
           (dim + (options_.update == RowUpdate::kRowwiseAdagrad ? 1 : 0)) +
       sizeof(int64_t));
  return chunks_.size() * per_chunk + index_.size() * sizeof(uint32_t);
}

void RowTable::InitialRow(int64_t id, float* out) const {
  const uint64_t key =
      Mix(Mix(options_.seed) ^
          (static_cast<uint64_t>(options_.table) + 1) * kGolden) ^
      Mix(static_cast<uint64_t>(id));
  const double b = options_.init_bound;
  for (int64_t k = 0; k < options_.dim; ++k) {
    // 24 random bits: a float's exact uniform on [0, 1).
    const uint64_t bits =
        Mix(key + (static_cast<uint64_t>(k) + 1) * kGolden) >> 40;
    const double u = static_cast<double>(bits) / 16777216.0;
    out[k] = static_cast<float>(-b + 2 * b * u);
  }
}

float* RowTable::Row(uint32_t slot) {
  return chunks_[slot / kChunkRows].get() + (slot % kChunkRows) * options_.dim;
}

float* RowTable::Sum(uint32_t slot) {
  return sums_[slot / kChunkRows].get() + slot % kChunkRows;
}

int64_t& RowTable::Id(uint32_t slot) {
  return ids_[slot / kChunkRows][slot % kChunkRows];
}

void RowTable::Grow() {
  std::vector<uint32_t> bigger(index_.size() * 2, kEmpty);
  const size_t mask = bigger.size() - 1;
  for (uint32_t slot : index_) {
    if (slot == kEmpty)
      continue;
    size_t at = Mix(static_cast<uint64_t>(Id(slot))) & mask;
    while (bigger[at] != kEmpty)
      at = (at + 1) & mask;
    bigger[at] = slot;
  }
  index_.swap(bigger);
}

uint32_t RowTable::SlotOf(int64_t id) {
  size_t mask = index_.size() - 1;
  size_t at = Mix(static_cast<uint64_t>(id)) & mask;
  while (index_[at] != kEmpty) {
    if (Id(index_[at]) == id)
      return index_[at];
    at = (at + 1) & mask;
  }
  // A new row: in the next free slot of the last chunk, or a new chunk.
  const uint32_t slot = count_;
  if (slot == kEmpty)
    throw std::length_error("RowTable: more than 2^32 - 1 rows");
  if (slot % kChunkRows == 0) {
    chunks_.emplace_back(new float[kChunkRows * options_.dim]);
    ids_.emplace_back(new int64_t[kChunkRows]);
    if (options_.update == RowUpdate::kRowwiseAdagrad)
      sums_.emplace_back(new float[kChunkRows]());
  }
  ++count_;
  Id(slot) = id;
  InitialRow(id, Row(slot));
  index_[at] = slot;
  if (static_cast<uint64_t>(count_) * 5 > index_.size() * 4)  // 0.8 full
    Grow();
  return slot;
}

at::Tensor RowTable::Gather(const at::Tensor& ids) {
  CheckIds(ids, "RowTable::Gather");
  const at::Tensor c = ids.contiguous();
  const int64_t n = c.size(0);
  at::Tensor out = at::empty({n, options_.dim}, at::kFloat);
  const int64_t* id = c.data_ptr<int64_t>();
  float* dst = out.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (id[i] < 0)
      throw std::invalid_argument("RowTable::Gather: negative id " +
                                  std::to_string(id[i]));
    const float* row = Row(SlotOf(id[i]));
    std::copy(row, row + options_.dim, dst + i * options_.dim);
  }
  return out;
}

void RowTable::Apply(const at::Tensor& ids, const at::Tensor& grads,
                     double lr) {
  CheckIds(ids, "RowTable::Apply");
  const int64_t n = ids.size(0), dim = options_.dim;
  if (grads.scalar_type() != at::kFloat || !grads.is_cpu() ||
      grads.sizes() != at::IntArrayRef({n, dim})) {
    throw std::invalid_argument("RowTable::Apply: grads must be float32 [" +
                                std::to_string(n) + ", " + std::to_string(dim) +
                                "] on the CPU");
  }
  const at::Tensor c = ids.contiguous(), g = grads.contiguous();
  const int64_t* id = c.data_ptr<int64_t>();
  const float* grad = g.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (id[i] < 0)
      throw std::invalid_argument("RowTable::Apply: negative id " +
                                  std::to_string(id[i]));
    const uint32_t slot = SlotOf(id[i]);
    float* row = Row(slot);
    const float* gi = grad + i * dim;
    double step = lr;
    if (options_.update == RowUpdate::kRowwiseAdagrad) {
      double squares = 0;
      for (int64_t k = 0; k < dim; ++k)
        squares += static_cast<double>(gi[k]) * gi[k];
      float* sum = Sum(slot);
      *sum += static_cast<float>(squares / static_cast<double>(dim));
      step = lr / (std::sqrt(static_cast<double>(*sum)) + options_.eps);
    }
    for (int64_t k = 0; k < dim; ++k)
      row[k] -= static_cast<float>(step * gi[k]);
  }
}

}  // namespace pstrain::ps
