// The StepDriver is the one path by which the update rule and the store
// change (share/doc/design.md, "The Engine's parts"): every call of a
// function that changes either, in the code around a running Engine
// (lib/ps/engine, lib/ps/service, lib/ps/rank), is in the driver or the
// parts it owns. The rule's and the store's own code, and their tests, are
// not read.

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::ps {
namespace {

namespace fs = std::filesystem;

// The StepDriver and the parts it owns.
const std::vector<std::string> kDriver = {"step_driver.h", "step_driver.cc",
                                          "key_updates.h", "key_updates.cc",
                                          "push_reader.h", "push_reader.cc"};

// A store that no Engine serves: loaded from a checkpoint before the Engine
// is made (--resume), and a standby's copy of another server's shard,
// which an Engine serves only once the standby takes the shard over.
const std::vector<std::string> kNoEngineYet = {"server_resume.cc",
                                               "standby.cc"};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `text` without its // comments, line by line.
std::vector<std::string> CodeLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line.substr(0, line.find("//")));
  return lines;
}

// Each call in `text` (file `name`) that changes the update rule or the
// store, as "name:line: call"; none in the driver's own files. A call on
// the StepDriver itself (steps_->RemoveWorker) is the path, not a bypass.
std::vector<std::string> Changes(const std::string& name,
                                 const std::string& text) {
  static const std::regex call(
      R"re((^|[^\w])(\w+(\(\))?)(->|\.)(PieceBuffer|AddPiece|AddPieceAt|AddRecord|AddRows|Push|CloseStep|RemoveWorker|AddWorker|DiscardStep|set_step_by_key|UpdateNextKey|UpdateAllKeys|set_step_order|UpdateAhead|NoteParamsSent|set_applied|set_version|SetGradients|SetRowGradient|ClipGradients|Step|StepKey|AdvanceVersion|CopyBuffers|RowsBuffer|Replay|CountPush|StepRows|ClearGradients)\()re");
  static const std::regex write(R"re(params\(\)\[[^\]]*\][^;]*copy_\()re");
  std::vector<std::string> found;
  const std::vector<std::string> lines = CodeLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    for (std::sregex_iterator it(line.begin(), line.end(), call), end;
         it != end; ++it) {
      const std::string receiver = (*it)[2];
      if (receiver.rfind("steps", 0) == 0)
        continue;
      found.push_back(name + ":" + std::to_string(i + 1) + ": " + receiver +
                      std::string((*it)[4]) + std::string((*it)[5]));
    }
    if (std::regex_search(line, write))
      found.push_back(name + ":" + std::to_string(i + 1) +
                      ": a write of params()");
  }
  return found;
}

bool In(const std::vector<std::string>& names, const std::string& name) {
  for (const std::string& n : names) {
    if (n == name)
      return true;
  }
  return false;
}

TEST(StepDriverPathTest, OnlyTheStepDriverChangesTheRuleOrTheStore) {
  const fs::path ps = fs::path(PSTRAIN_SOURCE_DIR) / "lib" / "ps";
  std::vector<std::string> bypasses;
  int files = 0;
  for (const char* part : {"engine", "service", "rank"}) {
    for (const auto& e : fs::directory_iterator(ps / part)) {
      const std::string name = e.path().filename().string();
      const auto ext = e.path().extension();
      if (ext != ".h" && ext != ".cc")
        continue;
      ++files;
      if (In(kDriver, name) || In(kNoEngineYet, name))
        continue;
      for (const std::string& c :
           Changes(std::string(part) + "/" + name, ReadFile(e.path())))
        bypasses.push_back(c);
    }
  }
  EXPECT_GT(files, 40);  // the folders were read
  std::string list;
  for (const std::string& b : bypasses)
    list += "\n  " + b;
  EXPECT_TRUE(bypasses.empty())
      << "calls that change the rule or the store outside the StepDriver:"
      << list;
}

TEST(StepDriverPathTest, ABypassIsNamedAndTheDriversOwnCallsAreNot) {
  const std::string text =
      "void ReplyDesk::X() {\n"
      "  steps_->RemoveWorker(w);  // the path\n"
      "  rule_->UpdateAllKeys();\n"
      "  // rule_->Push(w, v, false); a comment\n"
      "  server_->set_version(3);\n"
      "  store.params()[k].detach().copy_(t);\n"
      "  peers.push_back(p);\n"
      "}\n";
  EXPECT_EQ(Changes("engine/reply_desk.cc", text),
            (std::vector<std::string>{
                "engine/reply_desk.cc:3: rule_->UpdateAllKeys",
                "engine/reply_desk.cc:5: server_->set_version",
                "engine/reply_desk.cc:6: a write of params()"}));
}

}  // namespace
}  // namespace pstrain::ps
