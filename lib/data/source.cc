// TEMPORARY (main only, replaced by the data-sources branch): IDX sets.
#include "data/source.h"

namespace pstrain::data {
namespace {

class IdxSource : public Source {
 public:
  explicit IdxSource(Dataset d) : d_(std::move(d)) {}
  int64_t size() const override { return d_.size(); }
  SourceShape shape() const override { return {}; }
  Batch Get(const torch::Tensor& indices, int64_t) const override {
    return GetBatch(d_, indices);
  }

 private:
  Dataset d_;
};

}  // namespace

std::vector<std::string> SourceNames() {
  return DatasetNames();
}

Result<std::unique_ptr<Source>> OpenSource(const SourceOptions& o,
                                           Split split) {
  PS_ASSIGN_OR_RETURN(Dataset d, LoadDataset(o.dataset, o.data_dir, split));
  return std::unique_ptr<Source>(new IdxSource(std::move(d)));
}

}  // namespace pstrain::data
