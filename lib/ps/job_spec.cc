#include "ps/job_spec.h"

#include <nlohmann/json.hpp>

namespace pstrain::ps {

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kSync: return "sync";
    case Mode::kAsync: return "async";
  }
  return "unknown";
}

Result<Mode> ParseMode(const std::string& name) {
  if (name == "sync") return Mode::kSync;
  if (name == "async") return Mode::kAsync;
  return InvalidArgument("--mode '" + name + "': expected sync or async");
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
  if (s.log_interval < 1) {
    return bad("log_interval", std::to_string(s.log_interval), ">= 1");
  }
  if (s.optimizer != "sgd") return bad("optimizer", s.optimizer, "sgd");
  return Status::Ok();
}

nlohmann::json ToJson(const JobSpec& s) {
  return {{"model", s.model},
          {"dataset", s.dataset},
          {"mode", ModeName(s.mode)},
          {"optimizer", s.optimizer},
          {"lr", s.lr},
          {"momentum", s.momentum},
          {"weight_decay", s.weight_decay},
          {"batch_size", s.batch_size},
          {"epochs", s.epochs},
          {"max_steps", s.max_steps},
          {"seed", s.seed},
          {"eval_interval", s.eval_interval},
          {"log_interval", s.log_interval},
          {"world_size", s.world_size},
          {"num_servers", s.num_servers}};
}

Result<JobSpec> JobSpecFromJson(const nlohmann::json& j) {
  JobSpec s;
  try {
    s.model = j.at("model").get<std::string>();
    s.dataset = j.at("dataset").get<std::string>();
    auto mode = ParseMode(j.at("mode").get<std::string>());
    if (!mode.ok()) return mode.status();
    s.mode = *mode;
    s.optimizer = j.at("optimizer").get<std::string>();
    s.lr = j.at("lr").get<double>();
    s.momentum = j.at("momentum").get<double>();
    s.weight_decay = j.at("weight_decay").get<double>();
    s.batch_size = j.at("batch_size").get<int64_t>();
    s.epochs = j.at("epochs").get<int64_t>();
    s.max_steps = j.at("max_steps").get<int64_t>();
    s.seed = j.at("seed").get<uint64_t>();
    s.eval_interval = j.at("eval_interval").get<int64_t>();
    s.log_interval = j.at("log_interval").get<int64_t>();
    s.world_size = j.at("world_size").get<int>();
    s.num_servers = j.at("num_servers").get<int>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("job spec: ") + e.what());
  }
  return s;
}

}  // namespace pstrain::ps
