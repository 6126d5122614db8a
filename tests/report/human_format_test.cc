#include "report/human_format.h"

#include <gtest/gtest.h>

namespace pstrain::report {
namespace {

using nlohmann::json;

TEST(HumanFormatTest, StepWithAllFields) {
  json fields = {{"epoch", 1},
                 {"step", 50},
                 {"total_steps", 937},
                 {"loss", 0.51234},
                 {"samples_per_second", 1234.4}};
  EXPECT_EQ(FormatHuman("step", fields),
            "epoch 1 step 50/937 loss 0.5123 1234 samples/s");
}

TEST(HumanFormatTest, StepListsUnknownFieldsAfterKnownOnes) {
  EXPECT_EQ(FormatHuman("step", {{"step", 3}, {"lr", 0.01}}), "step 3 lr=0.01");
  EXPECT_EQ(FormatHuman("step", json::object()), "step");
}

TEST(HumanFormatTest, FieldOfWrongTypeIsListedAsIs) {
  EXPECT_EQ(FormatHuman("step", {{"step", 3}, {"loss", "n/a"}}),
            "step 3 loss=n/a");
}

TEST(HumanFormatTest, TotalStepsWithoutStepIsListed) {
  EXPECT_EQ(FormatHuman("step", {{"total_steps", 9}}), "step total_steps=9");
}

TEST(HumanFormatTest, Eval) {
  json fields = {
      {"step", 937}, {"test_accuracy", 0.87124}, {"test_loss", 0.35611}};
  EXPECT_EQ(FormatHuman("eval", fields),
            "eval step 937: test accuracy 0.8712 loss 0.3561");
  EXPECT_EQ(FormatHuman("eval", {{"test_loss", 0.5}}),
            "eval: test loss 0.5000");
}

TEST(HumanFormatTest, Epoch) {
  json fields = {{"epoch", 2},
                 {"loss", 0.5},
                 {"test_accuracy", 0.87},
                 {"wall_seconds", 12.34},
                 {"samples_per_second", 99.6}};
  EXPECT_EQ(FormatHuman("epoch", fields),
            "epoch 2 done: train loss 0.5000, test accuracy 0.8700, 12.3 s, "
            "100 samples/s");
  EXPECT_EQ(FormatHuman("epoch", {{"epoch", 3}}), "epoch 3 done");
}

TEST(HumanFormatTest, SummaryWithAllFields) {
  json fields = {{"test_accuracy", 0.8712},
                 {"test_loss", 0.3561},
                 {"steps", 937},
                 {"wall_seconds", 85.2},
                 {"samples_per_second", 1407.3},
                 {"bytes_pushed", 4500000000},
                 {"bytes_pulled", 4512345678},
                 {"compute_seconds", 69.0},
                 {"communication_seconds", 16.2}};
  EXPECT_EQ(FormatHuman("summary", fields),
            "done: test accuracy 0.8712, loss 0.3561, 937 steps in 85.2 s, "
            "1407 samples/s, pushed 4.5 GB, pulled 4.5 GB, "
            "compute 81% / communication 19%");
}

TEST(HumanFormatTest, SummaryShowsOnlyFieldsPresent) {
  EXPECT_EQ(FormatHuman("summary", {{"steps", 1}, {"wall_seconds", 0.04}}),
            "done: 1 step in 0.0 s");
  EXPECT_EQ(FormatHuman("summary", {{"steps", 10}}), "done: 10 steps");
  EXPECT_EQ(FormatHuman("summary", {{"wall_seconds", 3.25}}), "done: 3.2 s");
  EXPECT_EQ(FormatHuman("summary", {{"test_loss", 0.25}}),
            "done: test loss 0.2500");
  EXPECT_EQ(FormatHuman("summary", json::object()), "done");
}

TEST(HumanFormatTest, SummaryTimeSharesIncludeWaiting) {
  json fields = {{"compute_seconds", 6},
                 {"communication_seconds", 3},
                 {"waiting_seconds", 1}};
  EXPECT_EQ(FormatHuman("summary", fields),
            "done: compute 60% / communication 30% / waiting 10%");
}

TEST(HumanFormatTest, SummaryOmitsSharesOfZeroTime) {
  json fields = {
      {"steps", 2}, {"compute_seconds", 0}, {"communication_seconds", 0}};
  EXPECT_EQ(FormatHuman("summary", fields), "done: 2 steps");
}

TEST(HumanFormatTest, SummaryListsUnknownFields) {
  EXPECT_EQ(FormatHuman("summary", {{"steps", 2}, {"mode", "sync"}}),
            "done: 2 steps mode=sync");
}

TEST(HumanFormatTest, ErrorShowsMessageOnly) {
  EXPECT_EQ(FormatHuman("error", {{"message", "boom"}, {"exit_status", 1}}),
            "error: boom");
}

TEST(HumanFormatTest, UnknownEventListsFieldsInKeyOrder) {
  json fields = {{"port", 29500}, {"host", "0.0.0.0"}, {"ok", true}};
  EXPECT_EQ(FormatHuman("listen", fields),
            "listen host=0.0.0.0 ok=true port=29500");
  EXPECT_EQ(FormatHuman("ready", json()), "ready");
  EXPECT_EQ(FormatHuman("shape", {{"dims", {2, 3}}}), "shape dims=[2,3]");
}

TEST(HumanFormatTest, BytesAreThousandBased) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(999), "999 B");
  EXPECT_EQ(FormatBytes(1000), "1.0 kB");
  EXPECT_EQ(FormatBytes(1500), "1.5 kB");
  EXPECT_EQ(FormatBytes(999999), "1.0 MB");
  EXPECT_EQ(FormatBytes(4.5e9), "4.5 GB");
  EXPECT_EQ(FormatBytes(1e15), "1.0 PB");
  EXPECT_EQ(FormatBytes(2e18), "2000.0 PB");
}

}  // namespace
}  // namespace pstrain::report
