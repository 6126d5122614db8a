#include "apps/pstrain/metrics_endpoint.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>

#include "dashboard/page.h"
#include "util/resources.h"

namespace pstrain::apps {

namespace {

// --metrics_linger's end. Once this process has told its summary, the run
// is complete: SIGINT or SIGTERM then only ends the linger (exit status
// 0). Before it they act as they would without the flag.
std::atomic<bool> g_summarized{false};
int g_linger_read = -1, g_linger_write = -1;  // the handler's pipe

void OnStopSignal(int sig) {
  if (!g_summarized.load()) {
    signal(sig, SIG_DFL);
    raise(sig);  // delivered, by its default action, once this returns
    return;
  }
  const int saved = errno;
  const char byte = 1;
  ssize_t ignored = write(g_linger_write, &byte, 1);  // a full pipe: ended
  (void)ignored;
  errno = saved;
}

// The pipe and the handler, for SIGINT and SIGTERM unless they are
// ignored (nohup, a background job), which they stay.
Status CatchStopSignals() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
    return IOError(std::string("--metrics_linger: pipe: ") + strerror(errno));
  g_linger_read = fds[0];
  g_linger_write = fds[1];
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN)
      continue;
    struct sigaction action {};
    action.sa_handler = OnStopSignal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
  return Status::Ok();
}

metrics::HttpHandler Fixed(std::string content_type, std::string body) {
  return [type = std::move(content_type), body = std::move(body)] {
    return metrics::HttpResponse{200, type, body};
  };
}

// Rank 0's dashboard: the live page and dygraphs, read once at start.
Status AddDashboard(std::map<std::string, metrics::HttpHandler>* routes) {
  dashboard::PageOptions page;
  PS_ASSIGN_OR_RETURN(std::string js,
                      dashboard::ReadDygraphsFile(page, "dygraph.min.js"));
  PS_ASSIGN_OR_RETURN(std::string css,
                      dashboard::ReadDygraphsFile(page, "dygraph.min.css"));
  (*routes)["/"] = Fixed("text/html; charset=utf-8", dashboard::LivePage(page));
  (*routes)["/dygraph.min.js"] =
      Fixed("text/javascript; charset=utf-8", std::move(js));
  (*routes)["/dygraph.min.css"] =
      Fixed("text/css; charset=utf-8", std::move(css));
  return Status::Ok();
}

std::map<std::string, metrics::HttpHandler> Routes(MetricsEndpoint* e,
                                                   int rank) {
  std::map<std::string, metrics::HttpHandler> routes;
  routes["/metrics"] = [e] {
    e->peak_rss->Set(static_cast<double>(PeakRssBytes()));
    return metrics::HttpResponse{200, "text/plain; version=0.0.4",
                                 e->registry.Render()};
  };
  if (rank == 0) {
    routes["/api/events"] = [e] {
      return metrics::HttpResponse{200, "application/json",
                                   e->history.RunsJson("live")};
    };
  }
  return routes;
}

}  // namespace

Result<std::unique_ptr<MetricsEndpoint>> StartMetrics(const LocalFlags& f,
                                                      int rank,
                                                      const std::string& role) {
  if (f.metrics_port < 0)
    return std::unique_ptr<MetricsEndpoint>();
  auto e = std::make_unique<MetricsEndpoint>();
  e->registry.SetLabel("rank", std::to_string(rank));
  e->registry.SetLabel("role", role);
  e->registry.SetLabel("job", "");
  e->peak_rss = metrics::AddProcessMetrics(&e->registry);
  if (rank == 0)
    e->eval = metrics::AddEvalMetrics(&e->registry);
  metrics::HttpServerOptions o;
  o.host = f.metrics_addr;
  o.port = f.metrics_port;
  auto routes = Routes(e.get(), rank);
  if (rank == 0)
    PS_RETURN_IF_ERROR(AddDashboard(&routes));
  e->http = std::make_unique<metrics::HttpServer>(o, std::move(routes));
  PS_RETURN_IF_ERROR(e->http->Start());
  if (f.metrics_linger > 0)
    PS_RETURN_IF_ERROR(CatchStopSignals());
  return e;
}

std::unique_ptr<report::EventLog> MakeEventLog(const LocalFlags& f, int rank,
                                               const std::string& role,
                                               MetricsEndpoint* e) {
  report::EventLogOptions o = EventLogOptionsFor(f, rank, role);
  if (e == nullptr)
    return std::make_unique<report::EventLog>(o);
  const bool lingers = f.metrics_linger > 0;
  o.tap = [e, rank, lingers](const nlohmann::json& event) {
    // Before the summary is written: whoever reads it may signal at once.
    if (lingers && event.value("event", "") == "summary")
      g_summarized = true;
    if (rank == 0) {
      e->history.Add(event);
      metrics::NoteEval(e->eval, event);
    }
  };
  return std::make_unique<report::EventLog>(o);
}

void LingerForScrapes(const LocalFlags& f, const MetricsEndpoint* e) {
  if (e == nullptr || f.metrics_linger <= 0)
    return;
  using Clock = std::chrono::steady_clock;
  // A year at most: a longer one would overflow the clock's count.
  const double seconds = std::min(f.metrics_linger, 365 * 86400.0);
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
  pollfd stop{g_linger_read, POLLIN, 0};
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          end - Clock::now())
                          .count();
    if (left <= 0)
      return;
    const int n =
        poll(&stop, 1, static_cast<int>(std::min<int64_t>(left + 1, INT_MAX)));
    if (n > 0 || (n < 0 && errno != EINTR))
      return;  // SIGINT or SIGTERM ended it
  }
}

}  // namespace pstrain::apps
