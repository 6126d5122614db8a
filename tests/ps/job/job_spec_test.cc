#include "ps/job/job_spec.h"

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "ps/job/compression_spec.h"

namespace pstrain::ps {
namespace {

TEST(JobSpecTest, JsonRoundTrip) {
  JobSpec s;
  s.model = "mlp";
  s.mode = Mode::kAsync;
  s.lr = 0.125;
  s.batch_size = 7;
  s.seed = 42;
  s.world_size = 5;
  s.mode = Mode::kSsp;
  s.staleness = 3;
  s.optimizer = "adamw";
  s.nesterov = true;
  s.betas = {0.8, 0.95};
  s.eps = 1e-6;
  s.lr_schedule = "step:10:0.5";
  s.staleness_lr = "linear:0.25";
  s.total_steps = 99;
  auto back = JobSpecFromJson(nlohmann::json::parse(ToJson(s).dump()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ToJson(*back), ToJson(s));
  EXPECT_EQ(back->mode, Mode::kSsp);
  EXPECT_EQ(back->num_workers(), 4);
  EXPECT_EQ(back->staleness, 3);
  EXPECT_EQ(back->optimizer, "adamw");
  EXPECT_TRUE(back->nesterov);
  EXPECT_EQ(back->betas[1], 0.95);
  EXPECT_EQ(back->eps, 1e-6);
  EXPECT_EQ(back->lr_schedule, "step:10:0.5");
  EXPECT_EQ(back->staleness_lr, "linear:0.25");
  EXPECT_EQ(back->total_steps, 99);
}

TEST(JobSpecTest, MissingFieldIsNamed) {
  auto j = ToJson(JobSpec{});
  j.erase("lr");
  auto r = JobSpecFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("lr"), std::string::npos);
}

TEST(JobSpecTest, ValidationNamesTheFlag) {
  JobSpec s;
  EXPECT_TRUE(ValidateJobSpec(s).ok());
  s.lr = -1;
  EXPECT_EQ(ValidateJobSpec(s).message(), "--lr -1.000000: expected > 0");
  s = JobSpec{};
  s.batch_size = 0;
  EXPECT_EQ(ValidateJobSpec(s).message(), "--batch_size 0: expected >= 1");
  EXPECT_EQ(ParseMode("bsp").status().message(),
            "--mode 'bsp': expected sync, async or ssp");
  EXPECT_EQ(*ParseMode("ssp"), Mode::kSsp);
}

TEST(JobSpecTest, OptimizerFlagsAreValidated) {
  auto message = [](auto edit) {
    JobSpec s;
    s.world_size = 3;
    edit(s);
    return ValidateJobSpec(s).message();
  };
  EXPECT_EQ(message([](JobSpec& s) { s.optimizer = "lbfgs"; }),
            "--optimizer lbfgs: expected sgd, adam, adamw, adagrad or rmsprop");
  EXPECT_EQ(message([](JobSpec& s) {
              s.optimizer = "adam";
              s.nesterov = true;
            }),
            "--nesterov: only with --optimizer sgd");
  EXPECT_EQ(message([](JobSpec& s) {
              s.momentum = 0;
              s.nesterov = true;
            }),
            "--nesterov: needs --momentum > 0");
  EXPECT_EQ(message([](JobSpec& s) {
              s.betas = {0.9, 1.0};
            }),
            "--betas 0.900000,1.000000: expected two values in [0, 1)");
  EXPECT_EQ(message([](JobSpec& s) { s.eps = -1; }),
            "--eps -1.000000: expected >= 0 (0: the optimizer's default)");
  EXPECT_EQ(
      message([](JobSpec& s) { s.lr_schedule = "step:0:0.5"; }),
      "--lr_schedule 'step:0:0.5': expected auto, constant, step:N:GAMMA (N >= "
      "1, GAMMA > 0) "
      "or cosine");
  EXPECT_EQ(message([](JobSpec& s) { s.lr_schedule = "cosine"; }),
            "--lr_schedule cosine needs --max_steps");
  EXPECT_EQ(message([](JobSpec& s) { s.staleness_lr = "linear:x"; }),
            "--staleness_lr 'linear:x': expected none, inverse or linear:ALPHA "
            "(ALPHA >= 0)");
  EXPECT_EQ(message([](JobSpec& s) { s.staleness = -1; }),
            "--staleness -1: expected >= 0");
  for (const auto& name : {"sgd", "adam", "adamw", "adagrad", "rmsprop"}) {
    EXPECT_EQ(message([&](JobSpec& s) { s.optimizer = name; }), "") << name;
  }
  EXPECT_EQ(message([](JobSpec& s) {
              s.lr_schedule = "cosine";
              s.max_steps = 10;
              s.staleness_lr = "inverse";
            }),
            "");
}

TEST(JobSpecTest, LanguageModelRules) {
  auto message = [](auto edit) {
    JobSpec s;
    s.world_size = 3;
    s.model = "lstm_lm";
    s.dataset = "text";
    edit(s);
    return ValidateJobSpec(s).message();
  };
  EXPECT_EQ(message([](JobSpec&) {}), "");
  EXPECT_EQ(message([](JobSpec& s) { s.dataset = "mnist"; }),
            "--model lstm_lm --dataset mnist: lstm_lm trains on --dataset "
            "text, and only it");
  EXPECT_EQ(message([](JobSpec& s) { s.model = "net"; }),
            "--model net --dataset text: lstm_lm trains on --dataset text, "
            "and only it");
  EXPECT_EQ(message([](JobSpec& s) { s.tie_weights = true; }),
            "--tie_weights needs --embed_dim 256 equal to --hidden_dim 512");
  EXPECT_EQ(message([](JobSpec& s) {
              s.tie_weights = true;
              s.embed_dim = 512;
            }),
            "");
  EXPECT_EQ(message([](JobSpec& s) {
              s.clip_grad_norm = 0.25;
              s.num_servers = 2;
            }),
            "--clip_grad_norm: only with one server (each server would clip "
            "its own part of the gradient)");
  EXPECT_EQ(message([](JobSpec& s) { s.dropout = 1; }),
            "--dropout 1.000000: expected in [0, 1)");
}

TEST(JobSpecTest, OwnModelRules) {
  auto message = [](auto edit) {
    JobSpec s;
    s.world_size = 3;
    s.model = "own/mlp.pt";
    edit(s);
    return ValidateJobSpec(s).message();
  };
  EXPECT_EQ(message([](JobSpec&) {}), "");
  EXPECT_EQ(message([](JobSpec& s) { s.loss = "mse"; }), "");
  EXPECT_EQ(message([](JobSpec& s) { s.loss = "hinge"; }),
            "--loss 'hinge': expected cross_entropy, nll or mse");
  EXPECT_EQ(message([](JobSpec& s) {
              s.model = "net";
              s.loss = "mse";
            }),
            "--loss mse: the built-in model net is a classifier "
            "(log_softmax, trained with nll); --loss applies to --model PATH");
  EXPECT_EQ(message([](JobSpec& s) { s.loss = "nll"; }), "");
  EXPECT_EQ(message([](JobSpec& s) {
              s.loss = "mse";
              s.target_accuracy = 0.9;
            }),
            "--target_accuracy: not with --loss mse (a regression has no "
            "accuracy)");
  EXPECT_EQ(message([](JobSpec& s) { s.model_sha256 = std::string(64, 'a'); }),
            "");
  EXPECT_EQ(message([](JobSpec& s) { s.model_sha256 = "abc"; }),
            "model_sha256 'abc': expected 64 hex digits, and only with --model "
            "PATH");
  EXPECT_EQ(message([](JobSpec& s) {
              s.model = "net";
              s.model_sha256 = std::string(64, 'a');
            }),
            "model_sha256 '" + std::string(64, 'a') +
                "': expected 64 hex digits, and only with --model PATH");
}

TEST(JobSpecTest, PlacementRules) {
  auto message = [](auto edit) {
    JobSpec s;
    s.world_size = 3;
    s.placement = "server";
    edit(s);
    return ValidateJobSpec(s).message();
  };
  EXPECT_EQ(message([](JobSpec&) {}), "");
  EXPECT_EQ(message([](JobSpec& s) { s.mode = Mode::kAsync; }), "");
  EXPECT_EQ(message([](JobSpec& s) { s.placement = "gpu"; }),
            "--placement 'gpu': expected worker or server");
  EXPECT_EQ(message([](JobSpec& s) {
              s.world_size = 4;
              s.num_servers = 2;
            }),
            "--placement server: the model lives on one server, not 2");
  EXPECT_EQ(message([](JobSpec& s) { s.compression = "fp16"; }),
            "--placement server: workers send batches, not gradients or "
            "parameters: --compression and --pull_compression do not apply");
  EXPECT_EQ(message([](JobSpec& s) { s.backup_workers = 1; }),
            "--placement server: not with --backup_workers, --step_timeout or "
            "--reassign_shards");
  EXPECT_EQ(message([](JobSpec& s) { s.num_gpus = 3; }),
            "--num_gpus 3: expected 0, 1 or 2");
}

TEST(JobSpecTest, LstmLmDefaultsWhereNotGiven) {
  JobSpec s;
  s.model = "lstm_lm";
  ApplyModelDefaults([](const char* name) { return name == std::string("lr"); },
                     &s);
  EXPECT_EQ(s.dataset, "text");
  EXPECT_EQ(s.optimizer, "adam");
  EXPECT_EQ(s.lr, JobSpec().lr);  // given: kept
  JobSpec net;
  ApplyModelDefaults([](const char*) { return false; }, &net);
  EXPECT_EQ(net.dataset, "fashion-mnist");
  EXPECT_EQ(net.optimizer, "sgd");
}

// The table (ps/job/job_fields.inc) gives every field one JSON key, and reading
// checks each value's type and range.
TEST(JobSpecTest, EveryFieldHasOneJsonKey) {
  std::vector<std::string> names;
  const JobSpec spec;
  ForEachJobField(
      spec, [&](const JobField& f, const auto&) { names.push_back(f.name); });
  EXPECT_EQ(names.size(), 66u);
  const auto j = ToJson(JobSpec{});
  EXPECT_EQ(j.size(), names.size());
  for (const auto& name : names)
    EXPECT_TRUE(j.contains(name)) << name;
  EXPECT_EQ(j["mode"], "sync");
  EXPECT_EQ(j["betas"], nlohmann::json::array({0.9, 0.999}));
}

TEST(JobSpecTest, FromJsonChecksTypesAndRanges) {
  auto message = [](const char* key, nlohmann::json value) {
    auto j = ToJson(JobSpec{});
    j[key] = std::move(value);
    auto r = JobSpecFromJson(j);
    EXPECT_FALSE(r.ok()) << key;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(message("lr", "fast"), "field 'lr': expected a number");
  EXPECT_EQ(message("batch_size", 1.5),
            "field 'batch_size': expected an integer from "
            "-9223372036854775808 to 9223372036854775807");
  EXPECT_EQ(
      message("world_size", int64_t{1} << 40),
      "field 'world_size': expected an integer from -2147483648 to 2147483647");
  EXPECT_EQ(message("seed", -1),
            "field 'seed': expected an integer from 0 to "
            "18446744073709551615");
  EXPECT_EQ(message("nesterov", 1), "field 'nesterov': expected true or false");
  EXPECT_EQ(message("betas", {0.9}), "field 'betas': expected two numbers");
  EXPECT_EQ(message("server_addrs", {1}),
            "field 'server_addrs': expected an array of strings");
  EXPECT_EQ(message("mode", "bsp"),
            "field 'mode': --mode 'bsp': expected sync, async or ssp");
  EXPECT_EQ(JobSpecFromJson(nlohmann::json::array()).status().message(),
            "expected a JSON object");
}

TEST(JobSpecTest, BoundsRefuseNaNAndNameFieldsWithoutAFlagByKey) {
  JobSpec s;
  s.momentum = std::nan("");
  EXPECT_EQ(ValidateJobSpec(s).message(), "--momentum nan: expected in [0, 1)");
  s = JobSpec{};
  s.target_accuracy = 1.5;
  EXPECT_EQ(
      ValidateJobSpec(s).message(),
      "--target_accuracy 1.500000: expected a fraction in (0, 1] (0: none)");
  s = JobSpec{};
  s.total_steps = -1;
  EXPECT_EQ(ValidateJobSpec(s).message(), "total_steps -1: expected >= 0");
}

TEST(JobSpecTest, FlagTextsReadBackTheirDefaults) {
  JobSpec s;
  EXPECT_EQ(job_table::kModeText.format(s), "sync");
  EXPECT_EQ(job_table::kBetasText.format(s), "0.9,0.999");
  EXPECT_EQ(job_table::kEvalIntervalText.format(s), "0");
  ASSERT_TRUE(job_table::kEvalIntervalText.parse("30s", &s).ok());
  EXPECT_EQ(s.eval_seconds, 30);
  EXPECT_EQ(job_table::kEvalIntervalText.format(s), "30s");
  ASSERT_TRUE(job_table::kBetasText.parse("0.5,0.25", &s).ok());
  EXPECT_EQ(s.betas, (Betas{0.5, 0.25}));
  EXPECT_EQ(job_table::kBetasText.parse("0.5", &s).message(),
            "--betas '0.5': expected two numbers B1,B2");
}

}  // namespace
}  // namespace pstrain::ps

namespace pstrain::ps {
namespace {

TEST(CompressionSpecTest, ParsesEachCodecAndRefusesTheRest) {
  JobSpec s;
  s.world_size = 2;
  const std::pair<const char*, wire::Codec> kOk[] = {
      {"none", wire::Codec::kRaw},       {"fp16", wire::Codec::kFp16},
      {"bf16", wire::Codec::kBf16},      {"int8", wire::Codec::kInt8},
      {"topk:0.01", wire::Codec::kTopK}, {"onebit", wire::Codec::kOneBit}};
  for (const auto& [text, codec] : kOk) {
    s.compression = text;
    auto c = CompressionOf(s);
    ASSERT_TRUE(c.ok()) << text;
    EXPECT_EQ(c->push, codec);
    EXPECT_EQ(CompressionName(c->push, c->params), text);
  }
  for (const char* bad : {"topk", "topk:0", "topk:1.5", "topk:x", "int4", ""}) {
    s.compression = bad;
    EXPECT_EQ(ValidateJobSpec(s).message(),
              std::string("--compression '") + bad +
                  "': expected none, fp16, bf16, int8, topk:R with 0 < R <= "
                  "1, or onebit");
  }
  s.compression = "none";
  s.pull_compression = "int8";
  EXPECT_EQ(ValidateJobSpec(s).message(),
            "--pull_compression 'int8': expected none, fp16 or bf16");
  s.pull_compression = "bf16";
  s.error_feedback = "maybe";
  EXPECT_EQ(ValidateJobSpec(s).message(),
            "--error_feedback 'maybe': expected on or off");
  s.error_feedback = "off";
  auto c = CompressionOf(s);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->error_feedback);
  EXPECT_EQ(c->pull, wire::Codec::kBf16);
}

// Both ends apply this rule: only trained float32 tensors of at least
// --compress_min_bytes are coded.
TEST(CompressionSpecTest, SmallUntrainedAndNonFloatTensorsTravelRaw) {
  JobSpec s;
  s.compression = "int8";
  s.pull_compression = "fp16";
  auto c = CompressionOf(s);
  ASSERT_TRUE(c.ok());
  const at::Tensor big = torch::zeros({1024});  // 4096 bytes: the minimum
  EXPECT_EQ(PushCodecOf(*c, true, big), wire::Codec::kInt8);
  EXPECT_EQ(PullCodecOf(*c, true, big), wire::Codec::kFp16);
  EXPECT_EQ(PushCodecOf(*c, false, big), wire::Codec::kRaw);
  EXPECT_EQ(PushCodecOf(*c, true, torch::zeros({1023})), wire::Codec::kRaw);
  EXPECT_EQ(PushCodecOf(*c, true, torch::zeros({1024}, torch::kDouble)),
            wire::Codec::kRaw);
}

}  // namespace
}  // namespace pstrain::ps
