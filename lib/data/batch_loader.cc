// TEMPORARY (main only, replaced by the data-sources branch): reads on Take.
#include "data/batch_loader.h"

#include <deque>
#include <tuple>

namespace pstrain::data {

struct BatchLoader::Impl {
  const Source& source;
  std::deque<std::tuple<int64_t, torch::Tensor, int64_t>> queue;
};

BatchLoader::BatchLoader(const Source& source, int, int)
    : impl_(new Impl{source, {}}) {}
BatchLoader::~BatchLoader() = default;
void BatchLoader::Request(int64_t tag, torch::Tensor indices, int64_t epoch) {
  impl_->queue.emplace_back(tag, std::move(indices), epoch);
}
int BatchLoader::pending() const {
  return static_cast<int>(impl_->queue.size());
}
int64_t BatchLoader::front_tag() const {
  return impl_->queue.empty() ? -1 : std::get<0>(impl_->queue.front());
}
Batch BatchLoader::Take() {
  auto [tag, indices, epoch] = impl_->queue.front();
  impl_->queue.pop_front();
  return impl_->source.Get(indices, epoch);
}
void BatchLoader::Clear() {
  impl_->queue.clear();
}

}  // namespace pstrain::data
