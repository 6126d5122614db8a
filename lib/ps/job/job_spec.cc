#include "ps/job/job_spec.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "net/transport.h"
#include "ps/job/compression_spec.h"
#include "ps/job/interval.h"
#include "ps/job/job_flag_args.h"
#include "ps/job/job_rules.h"
#include "ps/job/optimizer.h"
#include "ps/job/rule_traits.h"

namespace pstrain::ps {

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kSync:
      return "sync";
    case Mode::kAsync:
      return "async";
    case Mode::kSsp:
      return "ssp";
  }
  return "unknown";
}

Result<Mode> ParseMode(const std::string& name) {
  if (name == "sync")
    return Mode::kSync;
  if (name == "async")
    return Mode::kAsync;
  if (name == "ssp")
    return Mode::kSsp;
  return InvalidArgument("--mode '" + name + "': expected sync, async or ssp");
}

namespace {

// The shortest text that reads back as `v` ("0.9", not "0.90000000000000002").
std::string ShortestText(double v) {
  std::string text;
  for (int precision = 1; precision <= 17; ++precision) {
    std::ostringstream s;
    s.precision(precision);
    s << v;
    text = s.str();
    if (std::strtod(text.c_str(), nullptr) == v)
      break;
  }
  return text;
}

std::string ModeText(const JobSpec& s) {
  return ModeName(s.mode);
}

Status ParseModeText(const std::string& text, JobSpec* s) {
  PS_ASSIGN_OR_RETURN(s->mode, ParseMode(text));
  return Status::Ok();
}

std::string BetasText(const JobSpec& s) {
  return ShortestText(s.betas[0]) + "," + ShortestText(s.betas[1]);
}

Status ParseBetasText(const std::string& text, JobSpec* s) {
  const size_t comma = text.find(',');
  bool ok = comma != std::string::npos;
  for (int i = 0; ok && i < 2; ++i) {
    const std::string part =
        i == 0 ? text.substr(0, comma) : text.substr(comma + 1);
    char* end = nullptr;
    s->betas[i] = std::strtod(part.c_str(), &end);
    ok = !part.empty() && end == part.c_str() + part.size();
  }
  if (!ok)
    return InvalidArgument("--betas '" + text +
                           "': expected two numbers B1,B2");
  return Status::Ok();
}

std::string EvalIntervalText(const JobSpec& s) {
  Interval every;
  every.steps = static_cast<uint64_t>(std::max<int64_t>(0, s.eval_interval));
  every.time =
      std::chrono::milliseconds(static_cast<int64_t>(s.eval_seconds * 1000));
  return FormatInterval(every);
}

Status ParseEvalIntervalText(const std::string& text, JobSpec* s) {
  PS_ASSIGN_OR_RETURN(Interval every, ParseInterval("--eval_interval", text,
                                                    /*allow_zero=*/true));
  s->eval_interval = static_cast<int64_t>(every.steps);
  s->eval_seconds = static_cast<double>(every.time.count()) / 1000;
  return Status::Ok();
}

// "--lr", or "total_steps" for a field no flag sets.
std::string FlagName(const JobField& f) {
  return f.flag.kind == job_table::JobFlag::Kind::kNone
             ? f.name
             : std::string("--") + f.name;
}

template <typename T>
Status CheckBounds(const JobField& f, const T& v) {
  const auto& b = f.bounds;
  if (b.expected == nullptr)
    return Status::Ok();
  if constexpr (std::is_arithmetic_v<T>) {
    if (!b.Contains(static_cast<double>(v))) {
      return InvalidArgument(FlagName(f) + " " + std::to_string(v) +
                             ": expected " + b.expected);
    }
  } else if constexpr (std::is_same_v<T, Betas>) {
    if (!b.Contains(v[0]) || !b.Contains(v[1])) {
      return InvalidArgument(FlagName(f) + " " + std::to_string(v[0]) + "," +
                             std::to_string(v[1]) + ": expected " + b.expected);
    }
  }
  return Status::Ok();
}

// Rules that tie fields together, or that name the choices of a field.
Status CheckRules(const JobSpec& s) {
  auto bad = [](const std::string& flag, const std::string& value,
                const std::string& expected) {
    return InvalidArgument("--" + flag + " " + value + ": expected " +
                           expected);
  };
  const auto& names = OptimizerNames();
  if (std::find(names.begin(), names.end(), s.optimizer) == names.end()) {
    return bad("optimizer", s.optimizer, OptimizerChoices());
  }
  if (s.nesterov && s.optimizer != "sgd") {
    return InvalidArgument("--nesterov: only with --optimizer sgd");
  }
  if (s.nesterov && s.momentum == 0) {
    return InvalidArgument("--nesterov: needs --momentum > 0");
  }
  auto schedule = LrScheduleOf(s);
  if (!schedule.ok())
    return schedule.status();
  if (schedule->kind == LrSchedule::Kind::kCosine && ScheduleVersions(s) <= 0) {
    return InvalidArgument("--lr_schedule cosine needs --max_steps");
  }
  auto staleness_lr = ParseStalenessLr(s.staleness_lr);
  if (!staleness_lr.ok())
    return staleness_lr.status();
  PS_RETURN_IF_ERROR(AsyncLrShare(s).status());
  PS_RETURN_IF_ERROR(AsyncMomentum(s).status());
  auto compression = CompressionOf(s);
  if (!compression.ok())
    return compression.status();
  if (s.dead_after > 0 && s.dead_after <= s.heartbeat) {
    return bad("dead_after", std::to_string(s.dead_after),
               "more than --heartbeat " + std::to_string(s.heartbeat) +
                   " (or 0: never)");
  }
  if (s.backup_workers < 0 ||
      s.backup_workers >= std::max(1, s.num_workers())) {
    return bad("backup_workers", std::to_string(s.backup_workers),
               "0.." + std::to_string(std::max(0, s.num_workers() - 1)) +
                   " (fewer than the " + std::to_string(s.num_workers()) +
                   " workers)");
  }
  if ((s.model == "lstm_lm") != (s.dataset == "text")) {
    return InvalidArgument("--model " + s.model + " --dataset " + s.dataset +
                           ": lstm_lm trains on --dataset text, and only it");
  }
  if (s.dataset == "text" && s.reassign_shards) {
    return InvalidArgument("--reassign_shards: not with --dataset text");
  }
  if (s.tie_weights && s.embed_dim != s.hidden_dim) {
    return InvalidArgument(
        "--tie_weights needs --embed_dim " + std::to_string(s.embed_dim) +
        " equal to --hidden_dim " + std::to_string(s.hidden_dim));
  }
  if (s.clip_grad_norm > 0 && s.num_servers > 1) {
    return InvalidArgument(
        "--clip_grad_norm: only with one server (each server would clip "
        "its own part of the gradient)");
  }
  // Reassigning a lost worker's shard, backup workers and a step's timeout
  // all act on steps that wait for every member: sync's.
  const bool steps_wait_for_all = RuleTraitsOf(s).waits_for_every_member;
  if (!steps_wait_for_all && s.reassign_shards) {
    return InvalidArgument("--reassign_shards: only with --mode sync");
  }
  if (!steps_wait_for_all && (s.backup_workers > 0 || s.step_timeout > 0)) {
    return InvalidArgument(
        "--backup_workers and --step_timeout: only with --mode sync");
  }
  PS_RETURN_IF_ERROR(CheckModelRules(s));
  PS_RETURN_IF_ERROR(CheckReplicaRules(s));
  PS_RETURN_IF_ERROR(net::ParseTransport(s.transport).status());
  PS_RETURN_IF_ERROR(CheckPlacementRules(s));
  return CheckFieldNeeds(s);
}

nlohmann::json JsonOf(Mode mode) {
  return ModeName(mode);
}
template <typename T>
nlohmann::json JsonOf(const T& v) {
  return v;
}

// Reads `j` into `*out`: "expected ..." when it is not a T.
template <typename T>
Status ReadJson(const nlohmann::json& j, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean())
      return InvalidArgument("expected true or false");
    *out = j.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    using Limits = std::numeric_limits<T>;
    bool fits = false;
    if (j.is_number_unsigned()) {
      fits = j.get<uint64_t>() <= static_cast<uint64_t>(Limits::max());
    } else if (j.is_number_integer()) {
      const int64_t n = j.get<int64_t>();
      fits =
          n >= 0
              ? static_cast<uint64_t>(n) <= static_cast<uint64_t>(Limits::max())
              : std::is_signed_v<T> && n >= static_cast<int64_t>(Limits::min());
    }
    if (!fits) {
      return InvalidArgument("expected an integer from " +
                             std::to_string(Limits::min()) + " to " +
                             std::to_string(Limits::max()));
    }
    *out = j.get<T>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number())
      return InvalidArgument("expected a number");
    *out = j.get<T>();
  } else if constexpr (std::is_same_v<T, Mode>) {
    if (!j.is_string())
      return InvalidArgument("expected sync, async or ssp");
    PS_ASSIGN_OR_RETURN(*out, ParseMode(j.get<std::string>()));
  } else if constexpr (std::is_same_v<T, Betas>) {
    if (!j.is_array() || j.size() != 2 || !j[0].is_number() ||
        !j[1].is_number()) {
      return InvalidArgument("expected two numbers");
    }
    *out = {j[0].get<double>(), j[1].get<double>()};
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string())
      return InvalidArgument("expected a string");
    *out = j.get<std::string>();
  } else {
    static_assert(std::is_same_v<T, std::vector<std::string>>,
                  "a job field of another type");
    auto is_string = [](const nlohmann::json& e) { return e.is_string(); };
    if (!j.is_array() || !std::all_of(j.begin(), j.end(), is_string)) {
      return InvalidArgument("expected an array of strings");
    }
    *out = j.get<std::vector<std::string>>();
  }
  return Status::Ok();
}

}  // namespace

void ApplyModelDefaults(const std::function<bool(const char*)>& given,
                        JobSpec* spec) {
  if (spec->model != "lstm_lm")
    return;
  if (!given("dataset"))
    spec->dataset = "text";
  if (!given("optimizer"))
    spec->optimizer = "adam";
  if (!given("lr"))
    spec->lr = 0.001;
}

namespace job_table {
const JobFlag kModeText{JobFlag::Kind::kText, &ModeText, &ParseModeText};
const JobFlag kBetasText{JobFlag::Kind::kText, &BetasText, &ParseBetasText};
const JobFlag kEvalIntervalText{JobFlag::Kind::kText, &EvalIntervalText,
                                &ParseEvalIntervalText};
}  // namespace job_table

Status ValidateJobSpec(const JobSpec& s) {
  Status status;
  ForEachJobField(s, [&](const JobField& f, const auto& v) {
    if (status.ok())
      status = CheckBounds(f, v);
  });
  PS_RETURN_IF_ERROR(status);
  return CheckRules(s);
}

nlohmann::json ToJson(const JobSpec& s) {
  nlohmann::json j = nlohmann::json::object();
  ForEachJobField(
      s, [&](const JobField& f, const auto& v) { j[f.name] = JsonOf(v); });
  return j;
}

Result<JobSpec> JobSpecFromJson(const nlohmann::json& j) {
  if (!j.is_object())
    return InvalidArgument("expected a JSON object");
  JobSpec s;
  Status status;
  ForEachJobField(s, [&](const JobField& f, auto& v) {
    if (!status.ok())
      return;
    auto it = j.find(f.name);
    if (it == j.end()) {
      status =
          InvalidArgument(std::string("field '") + f.name + "' is missing");
      return;
    }
    Status read = ReadJson(*it, &v);
    if (!read.ok()) {
      status = InvalidArgument(std::string("field '") + f.name +
                               "': " + read.message());
    }
  });
  PS_RETURN_IF_ERROR(status);
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
