#include "ps/job_spec.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "ps/optimizer.h"

namespace pstrain::ps {

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kSync: return "sync";
    case Mode::kAsync: return "async";
    case Mode::kSsp: return "ssp";
  }
  return "unknown";
}

Result<Mode> ParseMode(const std::string& name) {
  if (name == "sync") return Mode::kSync;
  if (name == "async") return Mode::kAsync;
  if (name == "ssp") return Mode::kSsp;
  return InvalidArgument("--mode '" + name + "': expected sync, async or ssp");
}

Status ValidateJobSpec(const JobSpec& s) {
  auto bad = [](const std::string& flag, const std::string& value,
                const std::string& expected) {
    return InvalidArgument("--" + flag + " " + value + ": expected " + expected);
  };
  if (!(s.lr > 0)) return bad("lr", std::to_string(s.lr), "> 0");
  if (s.momentum < 0 || s.momentum >= 1) {
    return bad("momentum", std::to_string(s.momentum), "in [0, 1)");
  }
  if (s.weight_decay < 0) {
    return bad("weight_decay", std::to_string(s.weight_decay), ">= 0");
  }
  if (s.batch_size < 1) return bad("batch_size", std::to_string(s.batch_size), ">= 1");
  if (s.epochs < 1) return bad("epochs", std::to_string(s.epochs), ">= 1");
  if (s.max_steps < 0) return bad("max_steps", std::to_string(s.max_steps), ">= 0");
  if (s.eval_interval < 0) {
    return bad("eval_interval", std::to_string(s.eval_interval), ">= 0");
  }
  if (!(s.eval_seconds >= 0)) {
    return bad("eval_interval", std::to_string(s.eval_seconds) + "s", ">= 0");
  }
  if (!(s.target_accuracy >= 0 && s.target_accuracy <= 1)) {
    return bad("target_accuracy", std::to_string(s.target_accuracy),
               "a fraction in (0, 1] (0: none)");
  }
  if (s.log_interval < 1) {
    return bad("log_interval", std::to_string(s.log_interval), ">= 1");
  }
  const auto& names = OptimizerNames();
  if (std::find(names.begin(), names.end(), s.optimizer) == names.end()) {
    return bad("optimizer", s.optimizer, "sgd, adam, adamw, adagrad or rmsprop");
  }
  if (s.nesterov && s.optimizer != "sgd") {
    return InvalidArgument("--nesterov: only with --optimizer sgd");
  }
  if (s.nesterov && s.momentum == 0) {
    return InvalidArgument("--nesterov: needs --momentum > 0");
  }
  for (double b : s.betas) {
    if (b < 0 || b >= 1) {
      return bad("betas", std::to_string(s.betas[0]) + "," + std::to_string(s.betas[1]),
                 "two values in [0, 1)");
    }
  }
  if (s.eps < 0) return bad("eps", std::to_string(s.eps), ">= 0 (0: the optimizer's default)");
  if (s.total_steps < 0) return bad("total_steps", std::to_string(s.total_steps), ">= 0");
  auto schedule = ParseLrSchedule(s.lr_schedule);
  if (!schedule.ok()) return schedule.status();
  if (schedule->kind == LrSchedule::Kind::kCosine && ScheduleVersions(s) <= 0) {
    return InvalidArgument("--lr_schedule cosine needs --max_steps");
  }
  auto staleness_lr = ParseStalenessLr(s.staleness_lr);
  if (!staleness_lr.ok()) return staleness_lr.status();
  if (s.staleness < 0) return bad("staleness", std::to_string(s.staleness), ">= 0");
  if (s.slice_bytes == 0) return bad("slice_bytes", "0", "> 0");
  if (!(s.heartbeat > 0)) return bad("heartbeat", std::to_string(s.heartbeat), "> 0");
  if (!(s.dead_after >= 0)) return bad("dead_after", std::to_string(s.dead_after), ">= 0");
  if (s.dead_after > 0 && s.dead_after <= s.heartbeat) {
    return bad("dead_after", std::to_string(s.dead_after),
               "more than --heartbeat " + std::to_string(s.heartbeat) + " (or 0: never)");
  }
  if (s.server_threads < 1) return bad("server_threads", std::to_string(s.server_threads), ">= 1");
  if (s.backup_workers < 0 || s.backup_workers >= std::max(1, s.num_workers())) {
    return bad("backup_workers", std::to_string(s.backup_workers),
               "0.." + std::to_string(std::max(0, s.num_workers() - 1)) +
                   " (fewer than the " + std::to_string(s.num_workers()) + " workers)");
  }
  if (!(s.step_timeout >= 0)) return bad("step_timeout", std::to_string(s.step_timeout), ">= 0");
  if (s.mode != Mode::kSync && s.reassign_shards) {
    return InvalidArgument("--reassign_shards: only with --mode sync");
  }
  if (s.mode != Mode::kSync && (s.backup_workers > 0 || s.step_timeout > 0)) {
    return InvalidArgument("--backup_workers and --step_timeout: only with --mode sync");
  }
  return Status::Ok();
}

nlohmann::json ToJson(const JobSpec& s) {
  return {{"model", s.model},
          {"dataset", s.dataset},
          {"mode", ModeName(s.mode)},
          {"staleness", s.staleness},
          {"optimizer", s.optimizer},
          {"lr", s.lr},
          {"momentum", s.momentum},
          {"nesterov", s.nesterov},
          {"weight_decay", s.weight_decay},
          {"betas", s.betas},
          {"eps", s.eps},
          {"lr_schedule", s.lr_schedule},
          {"staleness_lr", s.staleness_lr},
          {"total_steps", s.total_steps},
          {"batch_size", s.batch_size},
          {"epochs", s.epochs},
          {"max_steps", s.max_steps},
          {"seed", s.seed},
          {"eval_interval", s.eval_interval},
          {"eval_seconds", s.eval_seconds},
          {"target_accuracy", s.target_accuracy},
          {"log_interval", s.log_interval},
          {"world_size", s.world_size},
          {"num_servers", s.num_servers},
          {"slice_bytes", s.slice_bytes},
          {"backup_workers", s.backup_workers},
          {"step_timeout", s.step_timeout},
          {"server_threads", s.server_threads},
          {"heartbeat", s.heartbeat},
          {"dead_after", s.dead_after},
          {"reassign_shards", s.reassign_shards},
          {"server_addrs", s.server_addrs},
          {"resume_version", s.resume_version}};
}

Result<JobSpec> JobSpecFromJson(const nlohmann::json& j) {
  JobSpec s;
  try {
    s.model = j.at("model").get<std::string>();
    s.dataset = j.at("dataset").get<std::string>();
    auto mode = ParseMode(j.at("mode").get<std::string>());
    if (!mode.ok()) return mode.status();
    s.mode = *mode;
    s.staleness = j.at("staleness").get<int64_t>();
    s.optimizer = j.at("optimizer").get<std::string>();
    s.lr = j.at("lr").get<double>();
    s.momentum = j.at("momentum").get<double>();
    s.nesterov = j.at("nesterov").get<bool>();
    s.weight_decay = j.at("weight_decay").get<double>();
    s.betas = j.at("betas").get<std::array<double, 2>>();
    s.eps = j.at("eps").get<double>();
    s.lr_schedule = j.at("lr_schedule").get<std::string>();
    s.staleness_lr = j.at("staleness_lr").get<std::string>();
    s.total_steps = j.at("total_steps").get<int64_t>();
    s.batch_size = j.at("batch_size").get<int64_t>();
    s.epochs = j.at("epochs").get<int64_t>();
    s.max_steps = j.at("max_steps").get<int64_t>();
    s.seed = j.at("seed").get<uint64_t>();
    s.eval_interval = j.at("eval_interval").get<int64_t>();
    s.eval_seconds = j.at("eval_seconds").get<double>();
    s.target_accuracy = j.at("target_accuracy").get<double>();
    s.log_interval = j.at("log_interval").get<int64_t>();
    s.world_size = j.at("world_size").get<int>();
    s.num_servers = j.at("num_servers").get<int>();
    s.slice_bytes = j.at("slice_bytes").get<uint64_t>();
    s.backup_workers = j.at("backup_workers").get<int>();
    s.step_timeout = j.at("step_timeout").get<double>();
    s.server_threads = j.at("server_threads").get<int>();
    s.heartbeat = j.at("heartbeat").get<double>();
    s.dead_after = j.at("dead_after").get<double>();
    s.reassign_shards = j.at("reassign_shards").get<bool>();
    s.server_addrs = j.at("server_addrs").get<std::vector<std::string>>();
    s.resume_version = j.at("resume_version").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("job spec: ") + e.what());
  }
  return s;
}

Result<JobSpec> JobSpecFromPeer(std::string_view json,
                                const std::string& from) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return InvalidArgument("the job spec from " + from + " is not JSON");
  auto spec = JobSpecFromJson(j);
  Status s = spec.status();
  if (s.ok())
    s = ValidateJobSpec(*spec);
  if (s.ok() &&
      (spec->num_servers < 1 || spec->world_size <= spec->num_servers)) {
    s = InvalidArgument("world_size " + std::to_string(spec->world_size) +
                        ", num_servers " + std::to_string(spec->num_servers) +
                        ": expected at least one server and one worker");
  }
  if (s.ok() && !spec->server_addrs.empty() &&
      spec->server_addrs.size() != static_cast<size_t>(spec->num_servers)) {
    s = InvalidArgument(std::to_string(spec->server_addrs.size()) +
                        " server addresses, expected none or num_servers " +
                        std::to_string(spec->num_servers));
  }
  if (!s.ok())
    return InvalidArgument("the job spec from " + from + ": " + s.message());
  return spec;
}

}  // namespace pstrain::ps
