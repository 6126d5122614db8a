#pragma once
// FakeOutbox: records what an Engine asks of the world (ps/engine/outbox.h), so
// that tests can look at each frame sent and play the network's part by
// hand: which writes end, which posts run, when the timer fires.

#include <optional>
#include <string>
#include <vector>

#include "ps/engine/outbox.h"

namespace pstrain::testing {

class FakeOutbox : public ps::Outbox {
 public:
  struct Sent {
    ps::PeerId peer;
    wire::MsgType type;
    uint64_t request_id;
    std::string meta;
    std::vector<ps::DataSpan> data;
    bool gated;
    bool tagged;
    const net::SendGate* gate;  // the frame's, if gated
    uint64_t send_window;
    uint64_t after_pushes_below;
  };
  struct Closed {
    ps::PeerId peer;
    uint64_t request_id;  // of the error frame; 0 for a close without one
    Status why;
    bool error_frame;
  };

  void Send(ps::PeerId peer, const ps::OutFrame& f) override {
    sent.push_back({peer, f.type, f.request_id, std::string(f.meta), f.data,
                    f.gate != nullptr, f.tagged, f.gate, f.send_window,
                    f.after_pushes_below});
  }
  void ResumeWrite(ps::PeerId) override { ++resumed; }
  void SendErrorAndClose(ps::PeerId peer, uint64_t request_id,
                         const Status& s) override {
    closed.push_back({peer, request_id, s, true});
  }
  void Close(ps::PeerId peer, const Status& why) override {
    closed.push_back({peer, 0, why, false});
  }
  void Post() override { ++posts; }
  void WakeAt(ps::Time when) override { wake = when; }
  void Shutdown() override { shut_down = true; }
  void Info(const std::string& line) override { info.push_back(line); }

  std::vector<Sent> sent;
  std::vector<Closed> closed;
  int posts = 0;
  int resumed = 0;
  std::optional<ps::Time> wake;
  bool shut_down = false;
  std::vector<std::string> info;
};

}  // namespace pstrain::testing
