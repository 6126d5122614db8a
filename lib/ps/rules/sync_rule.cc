#include "ps/rules/sync_rule.h"

#include <string>

#include <ATen/ATen.h>

#include "util/check.h"

namespace pstrain::ps {

SyncRule::SyncRule(const JobSpec& spec, ParameterServer* store)
    : UpdateRule(RuleTraitsOf(spec), store),
      sums_(store->params(), store->num_workers()),
      pushed_(store->num_workers(), false),
      needed_(store->num_workers()),
      members_(store->num_workers()),
      order_(store->num_keys()),
      touched_(store->num_keys()),
      adds_(store->num_keys(), 0) {
  by_key_.possible = !traits().buffers_pushes && spec.clip_grad_norm <= 0 &&
                     !store->has_row_sparse() && store->dense_groups() <= 1;
  for (int k = 0; k < store->num_keys(); ++k) {
    if (store->is_row_sparse(k))
      touched_[k] = at::zeros({store->params()[k].size(0)}, at::kBool);
  }
}

Status SyncRule::CheckPush(int w, uint64_t version) const {
  const uint64_t current = store()->version();
  // Buffered sync: a push whose step closed without it is dropped (Push).
  if (version != current && !(traits().buffers_pushes && version < current)) {
    return InvalidArgument("push for version " + std::to_string(version) +
                           " while the server is at version " +
                           std::to_string(current));
  }
  if (pushed_[w] && version == current) {
    return InvalidArgument("second push for version " +
                           std::to_string(version));
  }
  return Status::Ok();
}

// A piece with NaN or Inf discards the step at once: its sum holds the bad
// values from here on, so neither a key updated ahead nor a step closed
// by its worker's loss, before its push ends, may use it.
bool SyncRule::Accumulate(int w, int key, uint64_t offset, const void* data,
                          uint64_t bytes) {
  step_started_ = true;
  if (sums_.Add(w, key, offset, data, bytes, needed_))
    return true;
  DiscardStep();
  return false;
}

void SyncRule::AccumulateRecord(int w, int key, wire::Codec codec,
                                const wire::CodecParams& params,
                                const uint8_t* data, uint64_t nbytes) {
  sums_.AddRecord(w, key, codec, params, data, nbytes, needed_);
  step_started_ = true;
}

// The first push of a step adds into zeros: the sum rows of a row-sparse
// key are cleared as each step takes them (TakeRowSums).
void SyncRule::AccumulateRows(int w, int key) {
  AddRowsToSums(w, key);
  sums_.NoteRows(w, key);  // the worker's push has begun
  step_started_ = true;
}

void SyncRule::AddRowsToSums(int w, int key) {
  const at::Tensor& ids = store()->PushedRowIds(w, key);
  sums_.sum(key).index_add_(0, ids, store()->PushedRows(w, key));
  touched_[key].index_fill_(0, ids, true);
  ++adds_[key];
}

int SyncRule::CountPush(int w) {
  store()->CountPush();
  pushed_[w] = true;
  step_started_ = true;
  return ++push_count_;
}

void SyncRule::FinishStep() {
  ParameterServer& store = *this->store();
  store.SetGradients(sums_.sums());
  TakeRowSums(discards_.pending);
  if (discards_.pending) {
    // No optimizer step: the parameters stay as they are, but for keys
    // updated ahead before the refused piece came.
    store.AdvanceVersion();
    ++discards_.count;
    discards_.pending = false;
    order_.Discard();
  } else if (by_key_.on && store.dense_groups() <= 1) {
    store.ClipGradients();  // the mean's norm, as one process clips its own
    by_key_.lr = store.lr();
    order_.Close();
    store.AdvanceVersion();
  } else {
    store.ClipGradients();
    store.Step(store.lr());
    // Buffers become the mean of the workers' (the sums hold it).
    store.CopyBuffers(sums_.sums());
  }
  sums_.Clear();
  pushed_.assign(pushed_.size(), false);
  push_count_ = 0;
  needed_ = members_;
  step_started_ = false;
}

// Divided by the pushes summed, as a dense key's sums are by the worker
// count: a row one worker touched gets g / count, what the dense mean of
// g and zeros gives.
void SyncRule::TakeRowSums(bool discard) {
  for (int k = 0; k < store()->num_keys(); ++k) {
    if (!touched_[k].defined())
      continue;
    const at::Tensor ids = touched_[k].nonzero().squeeze(1);
    if (!discard && adds_[k] > 0 && ids.numel() > 0) {
      at::Tensor grad = sums_.sum(k).index_select(0, ids);
      grad.div_(adds_[k]);
      store()->SetRowGradient(k, ids, grad);
    }
    sums_.sum(k).index_fill_(0, ids, 0);
    touched_[k].index_fill_(0, ids, false);
    adds_[k] = 0;
  }
}

// A lost worker's complete push still counts for this step. Otherwise the
// step stops waiting for it.
bool SyncRule::RemoveWorker(int w) {
  UpdateAllKeys();  // the sums may change
  --members_;
  if (pushed_[w])
    return false;
  --needed_;
  return LeftStep(w);
}

bool SyncRule::AddWorker(int /*w*/) {
  ++members_;
  if (step_started_)
    return false;
  needed_ = members_;
  return true;
}

void SyncRule::set_step_by_key(bool on) {
  by_key_.on = on;
  by_key_.ahead = on && by_key_.possible;
}

int SyncRule::UpdateNextKey() {
  const int k = order_.Next();
  if (k >= 0)
    store()->StepKey(k, sums_.sum(k), by_key_.lr);
  return k;
}

bool SyncRule::ReadyAhead(int key) const {
  return by_key_.ahead && step_started_ && !discards_.pending &&
         !order_.closed() && !order_.ahead(key) && sums_.Final(key, needed_);
}

void SyncRule::UpdateAhead(int key) {
  PS_CHECK(ReadyAhead(key)) << "UpdateAhead(" << key << ")";
  store()->StepKey(key, sums_.sum(key), store()->lr());
  order_.UpdateAhead(key);
}

}  // namespace pstrain::ps
