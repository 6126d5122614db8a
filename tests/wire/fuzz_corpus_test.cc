// Replays the wire fuzzer's kept corpus (tests/fuzz/corpus) through the
// fuzzer's own body, so that every input that once reached new code, and
// every fixed finding, stays a regression test of the ordinary build: each
// input must still be accepted, or refused with the exact Status, that
// tests/fuzz/corpus_outcomes.txt records for it.

#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "fuzz/wire_fuzz_input.h"

namespace pstrain::fuzz {
namespace {

const std::string kFuzzDir = std::string(PSTRAIN_SOURCE_DIR) + "/tests/fuzz";

// corpus_outcomes.txt: "# comment" lines, then "<file> <outcome>" lines.
std::map<std::string, std::string> ReadOutcomes(const std::string& path) {
  std::map<std::string, std::string> outcomes;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    const size_t space = line.find(' ');
    EXPECT_NE(space, std::string::npos) << line;
    outcomes[line.substr(0, space)] =
        space == std::string::npos ? "" : line.substr(space + 1);
  }
  return outcomes;
}

TEST(FuzzCorpusTest, EachInputIsAcceptedOrRefusedAsRecorded) {
  const auto expected = ReadOutcomes(kFuzzDir + "/corpus_outcomes.txt");
  const auto actual = CorpusOutcomes(kFuzzDir + "/corpus");
  // An input without an outcome, or an outcome without its input, fails:
  // tests/fuzz/update_outcomes.sh rewrites the file.
  for (const auto& [name, outcome] : actual) {
    auto it = expected.find(name);
    if (it == expected.end()) {
      ADD_FAILURE() << name << " has no outcome in corpus_outcomes.txt; it is "
                    << outcome;
      continue;
    }
    EXPECT_EQ(outcome, it->second) << name;
  }
  for (const auto& [name, outcome] : expected)
    EXPECT_EQ(actual.count(name), 1u) << name << " is not in the corpus";
  EXPECT_GE(actual.size(), 67u);  // the seeds alone (make_seeds.py)
}

// The outcomes the seeds must have, whatever the table says: every message
// type accepted, whole and fed in pieces.
TEST(FuzzCorpusTest, EverySeedIsAccepted) {
  const auto actual = CorpusOutcomes(kFuzzDir + "/corpus");
  for (const char* type :
       {"hello",      "error",      "get_job",   "job_spec",   "register",
        "ack",        "pull",       "push_pull", "params",     "done",
        "push",       "auth_hello", "challenge", "auth",       "server_info",
        "shard",      "heartbeat",  "snapshot",  "get_module", "module",
        "push_batch", "batch_done"}) {
    for (const char* piece : {"-0", "-5"}) {
      auto it = actual.find(type + std::string(piece));
      ASSERT_NE(it, actual.end()) << type << piece;
      EXPECT_EQ(it->second, type + std::string(" ok"));
    }
  }
  EXPECT_EQ(actual.at("two-frames-3"), "hello,push ok");
  // Frames with sparse rows (and row requests).
  for (const char* type : {"push_pull", "params", "push"}) {
    for (const char* piece : {"-sparse-0", "-sparse-5"}) {
      auto it = actual.find(type + std::string(piece));
      ASSERT_NE(it, actual.end()) << type << piece;
      EXPECT_EQ(it->second, type + std::string(" ok"));
    }
  }
  // --placement server: float32 targets, and a reply that stops the job.
  for (const char* piece : {"-0", "-5"}) {
    EXPECT_EQ(actual.at("push_batch-float32" + std::string(piece)),
              "push_batch ok");
    EXPECT_EQ(actual.at("batch_done-stop" + std::string(piece)),
              "batch_done ok");
  }
}

// A refused input names the check that refused it.
TEST(FuzzCorpusTest, OutcomesNameTheRefusal) {
  FuzzOutcome outcome;
  outcome.frames = {wire::MsgType::kAck, wire::MsgType::kAck,
                    wire::MsgType::kPush};
  EXPECT_EQ(outcome.ToString(), "ack*2,push ok");
  outcome.partial = true;
  EXPECT_EQ(outcome.ToString(), "ack*2,push partial");
  // Piece byte 0, then a header whose magic reads "XSTR".
  const std::string bad_magic =
      std::string(1, '\0') + "XSTR" + std::string(24, '\0');
  EXPECT_EQ(FuzzWireInput(reinterpret_cast<const uint8_t*>(bad_magic.data()),
                          bad_magic.size())
                .ToString(),
            "- corruption: frame header: magic is 0x52545358, expected "
            "0x52545350");
}

}  // namespace
}  // namespace pstrain::fuzz
