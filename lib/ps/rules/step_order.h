#pragma once
// StepOrder: the order in which a sync step's keys are stepped and sent,
// and which of them are stepped. A step's keys go in the order its pushes
// bring them (the workers' backward order, worker/grad_stream.h), so that
// the first keys in are the first stepped and the first to leave: the reply
// streams while later keys are still arriving (P3, Jayarajan et al.,
// "Priority-based Parameter Propagation for Distributed DNN Training",
// SysML 2019, section 3; BytePS's partitions). A key is stepped either
// ahead of the step's close (every member's pieces of it are in) or after
// it, in order. Replies wait on prefix(): the keys at the front of the
// order that are stepped. A value type; not thread-safe.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pstrain::ps {

class StepOrder {
 public:
  /// Key order, nothing updated ahead, nothing waiting.
  explicit StepOrder(int num_keys);

  /// The order of the next step: a permutation of 0..num_keys-1; anything
  /// else leaves the order as it is and returns false. REQUIRES: idle().
  bool Set(const std::vector<int>& keys);
  const std::vector<int>& keys() const { return keys_; }
  /// Key `key`'s place in the order plus one: the SendGate mark its bytes
  /// wait for (net/send_gate.h).
  uint32_t Mark(int key) const { return static_cast<uint32_t>(pos_[key]) + 1; }

  /// Key `key` was stepped before its step closed. REQUIRES: not closed,
  /// not ahead(key).
  void UpdateAhead(int key);
  bool ahead(int key) const { return ahead_[key]; }
  /// Keys updated ahead in the step under way.
  int ahead_count() const { return ahead_count_; }

  /// The step closed: every key not updated ahead waits for Next.
  void Close();
  /// The step closed without an optimizer step: the keys updated ahead
  /// keep theirs, no other key waits.
  void Discard();
  /// After Close: the next key to step, in order, skipping those stepped
  /// ahead; -1 when none is left (the step is whole again).
  int Next();

  /// Between Close and the Next that returns -1.
  bool closed() const { return closed_; }
  /// No key is updated ahead and none waits: every key holds the version.
  bool idle() const { return !closed_ && ahead_count_ == 0; }
  /// Whether key `key` holds the step's new value (updated ahead, or
  /// stepped since the close).
  bool stepped(int key) const;
  /// How many keys at the front of the order are stepped.
  uint32_t prefix() const { return static_cast<uint32_t>(front_); }

 private:
  void Advance();  // front_ over stepped keys

  std::vector<int> keys_;  // the order
  std::vector<int> pos_;   // by key: its place in keys_
  std::vector<bool> ahead_;
  int ahead_count_ = 0;
  bool closed_ = false;
  size_t next_ = 0;   // after Close: keys_[next_] is the next to step
  size_t front_ = 0;  // keys_[0, front_) are stepped
};

}  // namespace pstrain::ps
