// bench train takes launch's job flags: for every field of the job table
// (ps/job/job_fields.inc) with a flag, bench train has the same flag, help and
// default, and refuses what launch refuses with the same one-line error.
// The command lines are parsed and checked, never run.

#include "apps/pstrain/job_flags.h"

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "apps/pstrain/bench_subcommands.h"
#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"

namespace pstrain::apps {
namespace {

using Setup = CheckedCommand (*)(CLI::App*);
using Kind = ps::job_table::JobFlag::Kind;

// "" when `setup`'s subcommand takes `args` (parsed, then checked);
// otherwise its error: CLI11's or the check's.
std::string Refusal(Setup setup, std::vector<std::string> args) {
  CLI::App app;
  CheckedCommand command = setup(&app);
  RefuseNegativeUnsigned(&app);            // as main does for every subcommand
  std::reverse(args.begin(), args.end());  // CLI11 parses from the back
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  Status s = command.check();
  return s.ok() ? "" : s.message();
}

// `v` as the flag's text for a field of type T.
template <typename T>
std::string NumberText(double v) {
  if constexpr (std::is_integral_v<T>)
    return std::to_string(static_cast<long long>(v));
  return ExactText(v);
}

// Numbers just outside `b`: its bound where open, one past it where closed.
std::vector<double> OutOfBounds(const ps::job_table::Bounds& b) {
  std::vector<double> out;
  if (b.expected == nullptr)
    return out;
  if (std::isfinite(b.lo))
    out.push_back(b.lo_open ? b.lo : b.lo - 1);
  if (std::isfinite(b.hi))
    out.push_back(b.hi_open ? b.hi : b.hi + 1);
  return out;
}

// Values of a field's flag that are not in its bounds or not a word it
// knows: numbers outside the bounds, and for a text flag or a string an
// unknown word. `refused`: whether launch must refuse them (an unknown
// word may be a file's name, e.g. --model).
struct BadValue {
  std::string text;
  bool refused;
};

template <typename T>
std::vector<BadValue> BadValues(const ps::JobField& field) {
  std::vector<BadValue> out;
  for (double v : OutOfBounds(field.bounds)) {
    if constexpr (std::is_same_v<T, ps::Betas>) {
      const std::string b = ExactText(v);
      out.push_back({b + "," + b, true});
    } else if constexpr (std::is_arithmetic_v<T>) {
      out.push_back({NumberText<T>(v), true});
    }
  }
  if (field.flag.kind == Kind::kText || std::is_same_v<T, std::string>)
    out.push_back({"bogus", field.flag.kind == Kind::kText});
  return out;
}

TEST(JobFlagsTest, BenchTrainRefusesWhatLaunchRefuses) {
  const ps::JobSpec spec;
  int refused = 0;
  ps::ForEachJobField(spec, [&](const ps::JobField& field, const auto& v) {
    using T = std::decay_t<decltype(v)>;
    if (field.flag.kind == Kind::kNone ||
        kBenchTrainOwnFields.count(field.name) > 0)
      return;
    const std::string flag = std::string("--") + field.name;
    for (const BadValue& bad : BadValues<T>(field)) {
      const std::string launch = Refusal(SetupLaunchChecked, {flag, bad.text});
      const std::string bench =
          Refusal(SetupBenchTrainChecked, {flag, bad.text});
      SCOPED_TRACE(flag + " " + bad.text);
      if (bad.refused) {
        EXPECT_NE(launch, "");
      }
      EXPECT_EQ(bench, launch);
      EXPECT_EQ(launch.find('\n'), std::string::npos) << launch;
      refused += launch.empty() ? 0 : 1;
    }
  });
  // --momentum 1.5 among them, say: most fields have bounds.
  EXPECT_GE(refused, 30);
}

TEST(JobFlagsTest, BenchTrainRefusesMomentumOutOfTheUnitInterval) {
  EXPECT_EQ(Refusal(SetupBenchTrainChecked, {"--momentum", "1.5"}),
            "--momentum 1.500000: expected in [0, 1)");
  EXPECT_EQ(Refusal(SetupBenchTrainChecked, {"--optimizer", "lbfgs"}),
            "--optimizer lbfgs: expected sgd, adam, adamw, adagrad or "
            "rmsprop");
}

TEST(JobFlagsTest, BenchTrainHasLaunchsJobFlagsWithTheirHelpAndDefaults) {
  CLI::App launch, bench;
  SetupLaunchChecked(&launch);
  SetupBenchTrainChecked(&bench);
  const ps::JobSpec spec;
  ps::ForEachJobField(spec, [&](const ps::JobField& field, const auto&) {
    if (field.flag.kind == Kind::kNone ||
        kBenchTrainOwnFields.count(field.name) > 0)
      return;
    const std::string flag = std::string("--") + field.name;
    const CLI::Option* l = launch.get_option_no_throw(flag);
    const CLI::Option* b = bench.get_option_no_throw(flag);
    ASSERT_NE(l, nullptr) << flag;
    ASSERT_NE(b, nullptr) << flag;
    EXPECT_EQ(b->get_description(), l->get_description()) << flag;
    EXPECT_EQ(b->get_default_str(), l->get_default_str()) << flag;
  });
}

// A flag that only means something beside another is refused alone, in one
// line, and taken beside it: the job's fields (--staleness without --mode
// ssp) and launch's own (--restart_servers without --replicas 2 or more).
TEST(JobFlagsTest, AFlagThatNeedsAnotherIsRefusedAloneAndTakenBesideIt) {
  // `beside`: flags that, added to `alone`, give what it needs.
  struct Case {
    std::vector<std::string> alone, beside;
    std::string refusal;
  };
  const Case cases[] = {
      {{"--staleness", "2"}, {"--mode", "ssp"}, "--mode ssp"},
      {{"--image_size", "64"},
       {"--dataset", "imagefolder"},
       "--dataset imagefolder"},
      {{"--vocab_size", "30"}, {"--model", "lstm_lm"}, "--dataset text"},
      {{"--bptt", "5"}, {"--model", "lstm_lm"}, "--dataset text"},
      {{"--target_perplexity", "90"}, {"--model", "lstm_lm"}, "--dataset text"},
      {{"--embed_dim", "8"}, {"--model", "lstm_lm"}, "--model lstm_lm"},
      {{"--hidden_dim", "8"}, {"--model", "lstm_lm"}, "--model lstm_lm"},
      {{"--num_layers", "2"}, {"--model", "lstm_lm"}, "--model lstm_lm"},
      {{"--dropout", "0.5"}, {"--model", "lstm_lm"}, "--model lstm_lm"},
      {{"--compress_chunk", "64"},
       {"--compression", "onebit"},
       "--compression int8 or onebit"},
      {{"--error_feedback", "off"},
       {"--compression", "topk:0.1"},
       "--compression int8, topk or onebit"},
      {{"--send_window", "65536", "--priority=false"},
       {"--priority=true"},
       "--priority"},
      {{"--restart_servers"},
       {"--replicas", "2", "--num_servers", "2"},
       "--replicas 2 or more"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.alone[0]);
    EXPECT_EQ(Refusal(SetupLaunchChecked, c.alone),
              c.alone[0] + ": only with " + c.refusal);
    std::vector<std::string> both = c.alone;
    both.insert(both.end(), c.beside.begin(), c.beside.end());
    EXPECT_EQ(Refusal(SetupLaunchChecked, both), "");
  }
}

// The flags of every subcommand, set up as main sets them up: those whose
// value is unsigned are the ones listed, and each refuses -1 in one line.
TEST(JobFlagsTest, EveryUnsignedFlagRefusesANegativeValue) {
  CLI::App root;
  const std::pair<const char*, RunFn (*)(CLI::App*)> commands[] = {
      {"serve", SetupServe},  {"work", SetupWork},   {"launch", SetupLaunch},
      {"eval", SetupEval},    {"bench", SetupBench}, {"run", SetupRun},
      {"report", SetupReport}};
  for (const auto& [name, setup] : commands)
    setup(root.add_subcommand(name));
  RefuseNegativeUnsigned(&root);
  std::set<std::string> unsigned_flags;
  std::function<void(CLI::App*, std::vector<std::string>)> visit =
      [&](CLI::App* app, std::vector<std::string> path) {
        for (const CLI::Option* opt : app->get_options()) {
          if (opt->get_type_name().rfind("UINT", 0) != 0)
            continue;
          std::string words;
          for (const std::string& w : path)
            words += w + " ";
          unsigned_flags.insert(words + opt->get_name());
          std::string error = "accepted";
          std::vector<std::string> args = path;
          args.insert(args.end(), {opt->get_name(), "-1"});
          std::reverse(args.begin(), args.end());  // CLI11 parses from the back
          try {
            root.clear();
            root.parse(args);
          } catch (const CLI::ParseError& e) {
            error = e.what();
          }
          EXPECT_EQ(error,
                    opt->get_name() +
                        ": -1 is negative, expected an unsigned integer");
        }
        for (CLI::App* sub : app->get_subcommands({})) {
          std::vector<std::string> deeper = path;
          deeper.push_back(sub->get_name());
          visit(sub, deeper);
        }
      };
  visit(&root, {});
  EXPECT_EQ(unsigned_flags,
            (std::set<std::string>{
                "serve --seed", "serve --slice_bytes", "serve --send_window",
                "serve --max_frame_bytes", "work --max_frame_bytes",
                "launch --seed", "launch --slice_bytes", "launch --send_window",
                "launch --max_frame_bytes", "eval --max_frame_bytes",
                "bench wire --codec_elements", "bench train --seed",
                "bench train --send_window", "bench load --bytes", "run --seed",
                "run --slice_bytes", "run --send_window",
                "run --max_frame_bytes", "report --max_points"}));
}

}  // namespace
}  // namespace pstrain::apps
