#pragma once
// KeyUpdates: a sync version's keys updated one at a time, so that each
// key's parameters leave while the next is updated or still arriving. Two
// ways, both of streaming sync (ps/rules/update_rule.h, "Key by key"):
//   - after the close: a closed step's keys are updated one per
//     Engine::Continue, in the step's order, after its replies are queued;
//   - ahead of the close: a key is updated as soon as every member's
//     pieces of it are in, and the step's replies start then, so that a
//     step costs about the longer of the push and the pull, not their sum.
// A reply's keys wait on `gate()` (net/send_gate.h), whose marks are the
// step order's (StepOrder::Mark): each key's bytes leave once it is
// updated. A part of the StepDriver (step_driver.h), which alone calls it.
//
// Threading: not thread-safe; the Engine's thread only. The pointers given
// must outlive it.

#include <cstdint>

#include "net/send_gate.h"
#include "ps/engine/outbox.h"

namespace pstrain::ps {

class UpdateRule;
class ParameterServer;
struct KeyFormats;
class WriteFence;
class Membership;

class KeyUpdates {
 public:
  /// `priority`: --priority (a tagged reply sends each key as soon as it
  /// is updated, ahead of earlier keys still waiting).
  KeyUpdates(bool priority, UpdateRule* rule, const ParameterServer* server,
             KeyFormats* formats, WriteFence* fence, const Membership* members,
             Outbox* outbox);
  KeyUpdates(const KeyUpdates&) = delete;
  KeyUpdates& operator=(const KeyUpdates&) = delete;

  /// What replies of parameters wait on.
  net::SendGate* gate() { return &gate_; }
  /// Keys of the closed step are still to be updated, one per Continue.
  bool updating() const { return updating_; }
  /// Keys of the step under way are updated ahead of its close, and its
  /// replies are out.
  bool ahead() const { return ahead_; }

  /// A step closed (a new version). Returns whether it was updated ahead;
  /// from here the version's keys are updated one per Continue when the
  /// rule left them (updating()).
  bool Close();
  /// After Close: a step that was updated ahead and needs nothing more has
  /// its gate opened for every key.
  void OpenAfterAhead();
  /// Updates the next key of the closed step and asks for Continue;
  /// returns false, or true once none is left (the version is complete).
  bool UpdateNextKey();
  /// Continue came: returns whether it was the one UpdateNextKey asked for.
  bool TakePosted();
  /// Whether key `key` of the step under way may be updated ahead now.
  bool MayUpdateAhead(int key) const;
  /// The first key ahead of the close: only once no reply of the previous
  /// version is being written. Returns whether the step is now ahead (then
  /// every held reply of the next version may be sent at once).
  bool StartAhead();
  /// Updates key `key` ahead of the close. REQUIRES: ahead(),
  /// MayUpdateAhead(key).
  void UpdateAhead(int key);

 private:
  void OpenKeyMark(int key);
  void OpenKeyGate();
  void ResumeParamWrites();

  const bool priority_;
  UpdateRule* rule_;
  const ParameterServer* server_;
  KeyFormats* formats_;
  WriteFence* fence_;
  const Membership* members_;
  Outbox* outbox_;
  net::SendGate gate_;
  bool updating_ = false;
  bool posted_ = false;  // Continue updates the next key
  bool ahead_ = false;
};

}  // namespace pstrain::ps
