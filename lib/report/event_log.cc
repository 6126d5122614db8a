#include "report/event_log.h"

#include <chrono>
#include <utility>

#include "report/human_format.h"
#include "report/rank_board.h"
#include "util/check.h"

namespace pstrain::report {
namespace {

double UnixSeconds() {
  auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(since_epoch).count();
}

bool IsReservedKey(const std::string& key) {
  return key == "event" || key == "rank" || key == "role" || key == "time";
}

}  // namespace

EventLog::EventLog(EventLogOptions options) : options_(std::move(options)) {
  PS_CHECK(options_.out != nullptr && options_.err != nullptr)
      << "EventLog needs both streams";
  if (options_.live_width > 0 && !options_.quiet) {
    RankBoardOptions board;
    board.out = options_.err;
    board.width = options_.live_width;
    board_ = std::make_unique<RankBoard>(
        board,
        std::vector<std::string>{"rank " + std::to_string(options_.rank)});
  }
}

EventLog::~EventLog() = default;

void EventLog::Emit(const std::string& event, const nlohmann::json& fields) {
  PS_CHECK(fields.is_object() || fields.is_null())
      << "fields of event " << event << " must be an object";
  for (const auto& item : fields.items()) {
    PS_CHECK(!IsReservedKey(item.key()))
        << "event " << event << " has reserved field " << item.key();
  }
  const bool is_error = event == "error";
  if (options_.tap)
    options_.tap(EventObject(event, fields));
  std::string json_line = options_.json ? JsonLine(event, fields) : "";
  std::string human_line;
  if (is_error || !options_.quiet) {
    human_line = (is_error ? std::string("pstrain: ") : Prefix()) +
                 FormatHuman(event, fields);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.json)
    WriteLine(options_.out, json_line);
  if (board_) {
    nlohmann::json e = fields.is_null() ? nlohmann::json::object() : fields;
    e["event"] = event;
    board_->Event(0, e);
  } else if (!human_line.empty()) {
    WriteLine(options_.err, human_line);
  }
}

void EventLog::Info(const std::string& message) {
  if (options_.quiet)
    return;
  std::string line = Prefix() + message;
  std::lock_guard<std::mutex> lock(mu_);
  if (board_) {
    board_->Line(0, message);
  } else {
    WriteLine(options_.err, line);
  }
}

void EventLog::Error(const std::string& message, int exit_status) {
  Emit("error", {{"message", message}, {"exit_status", exit_status}});
}

std::string EventLog::Prefix() const {
  if (!options_.prefix)
    return "";
  if (options_.role.empty())
    return "pstrain: ";
  return "pstrain rank " + std::to_string(options_.rank) + " (" +
         options_.role + "): ";
}

template <typename Json>
Json EventLog::Object(const std::string& event,
                      const nlohmann::json& fields) const {
  Json line;
  line["event"] = event;
  line["rank"] = options_.rank;
  line["role"] = options_.role;
  line["time"] = UnixSeconds();
  for (const auto& item : fields.items())
    line[item.key()] = item.value();
  return line;
}

nlohmann::json EventLog::EventObject(const std::string& event,
                                     const nlohmann::json& fields) const {
  return Object<nlohmann::json>(event, fields);
}

std::string EventLog::JsonLine(const std::string& event,
                               const nlohmann::json& fields) const {
  return Object<nlohmann::ordered_json>(event, fields)
      .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void EventLog::WriteLine(std::ostream* stream, const std::string& line) {
  *stream << line << '\n';
  stream->flush();
}

}  // namespace pstrain::report
