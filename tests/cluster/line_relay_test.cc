#include "cluster/line_relay.h"

#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace pstrain::cluster {
namespace {

TEST(LineRelayTest, WritesOnlyCompleteLinesPrefixed) {
  std::ostringstream out;
  LineRelay relay(&out, "[a] ");
  relay.Feed("one\ntw", 6);
  EXPECT_EQ(out.str(), "[a] one\n");
  relay.Feed("o\n\nthr", 6);
  EXPECT_EQ(out.str(), "[a] one\n[a] two\n[a] \n");
  relay.Finish();
  EXPECT_EQ(out.str(), "[a] one\n[a] two\n[a] \n[a] thr\n");
}

TEST(LineRelayTest, FinishWithoutPendingBytesWritesNothing) {
  std::ostringstream out;
  LineRelay relay(&out, "");
  relay.Feed("x\n", 2);
  relay.Finish();
  relay.Finish();
  EXPECT_EQ(out.str(), "x\n");
}

TEST(LineRelayTest, OverlongLinesAreCut) {
  std::ostringstream out;
  LineRelay relay(&out, "> ", /*max_line_bytes=*/4);
  std::string text = "abcdefghij\nklmn\nop";
  relay.Feed(text.data(), text.size());
  EXPECT_EQ(out.str(), "> abcd\n> efgh\n> ij\n> klmn\n");
  relay.Finish();
  EXPECT_EQ(out.str(), "> abcd\n> efgh\n> ij\n> klmn\n> op\n");
}

}  // namespace
}  // namespace pstrain::cluster
