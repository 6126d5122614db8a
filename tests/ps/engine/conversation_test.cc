// Drives the Engine through every row of share/doc/conversation.md: at
// that stage, from that peer, that message gets that answer.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/job/tensor_codec.h"
#include "testing/engine_harness.h"

namespace pstrain::ps {
namespace {

using testing::DoneWith;
using testing::EngineHarness;

struct Row {
  std::string stage, peer, message, answer;
};

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The rows of "## The table".
std::vector<Row> ReadTable() {
  std::ifstream in(std::string(PSTRAIN_SOURCE_DIR) +
                   "/share/doc/conversation.md");
  std::vector<Row> rows;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0)
      in_table = line == "## The table";
    if (!in_table || line.rfind("| ", 0) != 0 || line.rfind("| stage", 0) == 0)
      continue;
    std::vector<std::string> cells;
    std::stringstream s(line.substr(1));
    for (std::string cell; std::getline(s, cell, '|');)
      cells.push_back(Trim(cell));
    if (cells.size() >= 4)
      rows.push_back({cells[0], cells[1], cells[2], cells[3]});
  }
  return rows;
}

wire::MsgType TypeNamed(const std::string& name) {
  for (uint16_t t = 1; t < 64; ++t) {
    if (name == wire::MsgTypeName(static_cast<wire::MsgType>(t))) {
      return static_cast<wire::MsgType>(t);
    }
  }
  ADD_FAILURE() << "no message named " << name;
  return wire::MsgType::kAck;
}

JobSpec Spec() {
  JobSpec s;
  s.mode = Mode::kSync;
  s.world_size = 2;  // rank 0 serves, rank 1 works
  s.lr = 0.1;
  return s;
}

class Conversation {
 public:
  explicit Conversation(const Row& row)
      : row_(row),
        h_(Spec(), {torch::zeros({4}).requires_grad_()}, Options(row)) {}

  static EngineOptions Options(const Row& row) {
    EngineOptions o;
    if (row.stage == "unauthenticated")
      o.auth_token = "secret";
    return o;
  }

  // Brings a peer to the row's stage; false if that failed.
  bool Reach() {
    if (row_.stage == "registered" || row_.stage == "done") {
      peer_ = h_.JoinWorker(1);
      if (row_.stage == "done" && !h_.Feed(peer_, DoneWith(), 3).ok())
        return false;
      return true;
    }
    peer_ = h_.Accept();
    if (row_.stage == "hello")
      return h_.Feed(peer_, Hello(), 1).ok();
    return row_.stage == "new" || row_.stage == "unauthenticated";
  }

  // Sends the row's message and names what came back.
  std::string Answer() {
    const size_t sent_before = h_.outbox().sent.size();
    if (!Send().ok())
      return "error";  // refused before the frame was read
    h_.Settle();
    if (auto closed = h_.ClosedFor(peer_))
      return closed->error_frame ? "error" : "closed";
    std::string answer = "none";
    for (size_t i = sent_before; i < h_.outbox().sent.size(); ++i) {
      const auto& s = h_.outbox().sent[i];
      if (s.peer == peer_)
        answer = wire::MsgTypeName(s.type);
    }
    return answer;
  }

 private:
  wire::Hello Hello() const {
    const uint32_t rank = row_.peer == "tool" ? 0 : 1;
    const wire::Role role = row_.peer == "tool"     ? wire::Role::kTool
                            : row_.peer == "server" ? wire::Role::kServer
                                                    : wire::Role::kWorker;
    return wire::Hello{role, rank, 2};
  }

  Status Send() {
    const std::string& m = row_.message;
    const uint64_t id = 7;
    auto grads = std::vector<at::Tensor>{torch::ones({4})};
    if (m == "hello")
      return h_.Feed(peer_, Hello(), id);
    if (m == "push_pull")
      return h_.Push(peer_, h_.server().version(), grads, id, true);
    if (m == "push")
      return h_.Push(peer_, h_.server().version(), grads, id, false);
    if (m == "register") {
      return h_.Feed(peer_,
                     wire::Register{{KeySpecOf("k0", h_.server().params()[0])}},
                     id);
    }
    if (m == "pull")
      return h_.Feed(peer_, wire::Pull{0}, id);
    if (m == "done")
      return h_.Feed(peer_, DoneWith(), id);
    if (m == "snapshot")
      return h_.Feed(peer_, wire::Snapshot{0, false}, id);
    if (m == "heartbeat")
      return h_.Feed(peer_, wire::Heartbeat{R"({"steps":1})"}, id);
    if (m == "server_info")
      return h_.Feed(peer_, wire::ServerInfo{"127.0.0.1:5"}, id);
    if (m == "auth_hello")
      return h_.Feed(peer_, wire::AuthHello{std::string(32, 'n')}, id);
    // The two that carry tensors carry their bytes, so that the engine, not
    // the frame parser, is what answers.
    const at::Tensor& p = h_.server().params()[0];
    std::string meta;
    if (m == "shard") {
      wire::Shard shard;
      shard.params.push_back(DescribeTensor(0, p));
      wire::EncodeMeta(shard, &meta);
      return h_.FeedRaw(peer_, wire::MsgType::kShard, meta, id, {}, p.nbytes());
    }
    if (m == "params") {
      wire::Params params;
      params.params.push_back(DescribeTensor(0, p));
      wire::EncodeMeta(params, &meta);
      return h_.FeedRaw(peer_, wire::MsgType::kParams, meta, id, {},
                        p.nbytes());
    }
    // Messages with no fields.
    return h_.FeedRaw(peer_, TypeNamed(m), "", id, {});
  }

  Row row_;
  EngineHarness h_;
  PeerId peer_ = 0;
};

TEST(ConversationTest, TheEngineAnswersAsTheTableSays) {
  const std::vector<Row> rows = ReadTable();
  ASSERT_GE(rows.size(), 30u)
      << "share/doc/conversation.md: the table went missing";
  for (const Row& row : rows) {
    SCOPED_TRACE(row.stage + " | " + row.peer + " | " + row.message);
    TypeNamed(row.message);  // the table names real messages
    Conversation c(row);
    ASSERT_TRUE(c.Reach());
    const std::string expected = row.answer.substr(0, row.answer.find(','));
    EXPECT_EQ(c.Answer(), expected);
  }
}

}  // namespace
}  // namespace pstrain::ps
